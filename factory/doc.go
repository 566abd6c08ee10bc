// Package factory wires warmcache informers to a cache file: one bbolt
// file (store/bolt) holds the stores of many informers, one per resource
// and scope, as client-go's SharedInformerFactory shares one cache per
// resource. It builds the list/watch of each informer (typed REST clients
// for built-in kinds, the dynamic client for custom resources, the
// metadata client for metadata-only informers: ForMetadata), records
// each informer's identity (resource, kind, scope, codec, indexes) in the
// file so that a restart finds its own data, and plugs informers into
// controller-runtime through NewInformerFunc and HookInformer (the
// crcache module builds a whole controller-runtime cache on them). A
// metadata-only informer (MetadataKind) and an unstructured one of a typed
// kind (UnstructuredKind) each have their own identity, apart from the
// typed informer of the same resource and scope.
//
// A controller calls New once (Options.Path, the file; Options.RESTConfig,
// the cluster), asks ForResource (typed kinds), ForDynamic (custom resources)
// or ForMetadata (metadata only) for each informer, or InformerFor with a
// ListerWatcher of its own (as Example does), and adds its handlers, then
// calls Start, WaitForCacheSync, and Shutdown when it stops, which flushes
// and closes the file. Package informers puts client-go's
// SharedInformerFactory interface on a Factory.
//
//	f, err := factory.New(ctx, factory.Options{Path: "/var/cache/ctl/cache.db", RESTConfig: config})
//	if err != nil {
//		return err // bolt.ErrLocked: another process holds the file
//	}
//	defer f.Shutdown()
//	pods, err := f.ForResource(ctx, corev1.SchemeGroupVersion.WithResource("pods"), "Pod", factory.Scope{})
//	if err != nil {
//		return err
//	}
//	pods.AddEventHandler(handler) // a cache.SharedIndexInformer
//	f.Start(ctx)
//	for name, synced := range f.WaitForCacheSync(ctx) { ... }
//	lister := corelisters.NewPodLister(pods.GetIndexer()) // package listers/core/v1
//
// The file's directory must exist (New does not create it); a warm start
// needs the file to outlive the process, on a volume that survives the
// pod (docs/deployment.md in the repository).
//
// WatchDiscovered makes the factory follow the cluster's discovery instead
// (Discovered): an informer per resource that can be listed and watched,
// built-in or custom, in its group's preferred version, selected by rules
// of groups, kinds and namespaces (DiscoveryOptions.Include and Exclude,
// as Argo CD's resource.inclusions and resource.exclusions), all in the
// one file. Discovery is polled and CustomResourceDefinitions are watched:
// a resource that appears gets an informer, started at once; one that goes
// has its informer stopped and its data deleted from the file, and so
// does, at the first refresh after a restart, one that went while the
// controller was stopped.
//
// Each resource in the file also records the cluster it came from
// (Options.ClusterID: by default the UID of the kube-system namespace, one
// GET when New opens the file) and the version of its transform
// (WithTransformVersion). A resource recorded with another cluster or
// transform version is discarded when its informer is created, with a log
// line saying why, and relisted: not one of its objects reaches a handler
// or the indexer. When the GET is forbidden the cluster is recorded as
// unknown and New logs it; set Options.ClusterID then.
//
// Index entries are kept across restarts while the informer's index names
// are the same; the file cannot see an index function's code. An index
// function that changes meaning under the same name needs a new
// WithIndexVersion, which makes the warm start rebuild the entries from
// the stored objects instead of answering ByIndex from the old ones.
//
// A transform or an index function given at creation that changes meaning
// without a new version is still found when it changes what it makes of
// the resource's sample object: each resource keeps one object as the
// server sent it (bolt.Identity.IsSample; sealed with the resource) with
// fingerprints of what its functions made of it, applied again when the
// informer is created: a difference discards the stored objects, with a
// log line, and the informer relists. A change the sample does not show is
// not seen: the versions remain the way to say that a function changed.
//
// Sensitive resources (Secrets, DefaultSensitive, and those of
// Options.Sensitive or WithSealing) are stored sealed with AES-256-GCM
// under Options.Keys (package store/seal): their data never reaches the
// file, its backups or a copy moved aside in plaintext. Without keys their
// informers keep their objects in memory, as client-go's do, with a log
// line; WithUnsafePlaintext opts one informer out.
//
// The queues between the informers' reflectors and their stores share a
// budget (Options.QueueBudget, DefaultQueueBudget objects by default), so
// that the decoded objects queued while many informers list at once do
// not grow with the number of informers: each queue is also bounded by its
// own QueueCapacity, holds at most half the budget, and always takes one
// page or event when it is empty, so no informer waits forever for
// another, not even for one whose handler is stuck. Options.MemoryBudget
// sets this budget, the hot tier, the read-ahead and how many relists and
// replays run at once (a reflector.ListGate) from one number of bytes.
//
// A Scope with a Shard sends it as the server-side shard selector
// (ListOptions.ShardSelector, kube-apiserver 1.36's alpha
// ShardedListAndWatch gate; docs/scale-out.md) on every list and watch,
// and checks every list answer: it must carry ListMeta.ShardInfo with the
// selector sent (a metadata-only list, which kube-apiserver sends without
// ShardInfo, must hold only objects inside the shard's hash ranges).
// Otherwise the list fails with ErrShardIgnored: a server without the gate
// ignores the selector and sends the whole collection. The reflector
// reports the error to the watch error handler and retries on its
// backoff; nothing of that list reaches the store or the handlers, and
// the informer does not sync. A sharded informer relists with paginated
// LIST, not WatchList, whose stream carries no ShardInfo to check. Its
// watches, which carry no ShardInfo either, drop each event of an object
// outside the shard's hash ranges (a watch opened on a server without the
// gate sends every shard's), logging the first of each watch; bookmarks
// and errors pass.
//
// The watches of the clients the factory builds decode their streams on
// every core, events still delivered in order with client-go's semantics
// (factory/internal/watchdecode; ARCHITECTURE.md has the design).
//
// Without Options.Path the stores live in memory (store/memory), like
// client-go's.
//
// A corrupt, foreign or unflushed file is moved aside and rebuilt from the
// apiserver (invariant 5 of ARCHITECTURE.md); package informer never sees the
// file, only the store.Store contract.
package factory
