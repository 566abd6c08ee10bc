// Package informers is client-go's informers.SharedInformerFactory on a
// warmcache file: controllers written against client-go's factory
// (f.Core().V1().Pods().Informer() and Lister(), InformerFor, ForResource,
// WaitForCacheSync, WithNamespace, WithTweakListOptions, WithTransform,
// WithCustomResyncConfig) switch by changing the import and passing a
// factory.Factory, and every generated typed informer of client-go then
// gets a warmcache informer whose cache lives in that file and survives
// restarts:
//
//	wf, err := factory.New(ctx, factory.Options{Path: "/var/cache/ctl/cache.db", RESTConfig: config})
//	...
//	f := informers.NewSharedInformerFactoryWithOptions(wf, client, 10*time.Minute,
//		informers.WithNamespace("prod"), informers.WithRESTConfig(config))
//	defer f.Shutdown() // stops the informers, flushes and closes the file
//	pods := f.Core().V1().Pods()
//	pods.Informer().AddEventHandler(handler)
//	f.Start(ctx.Done())
//	for typ, ok := range f.WaitForCacheSync(ctx.Done()) { ... }
//
// Give the factory.Factory the rest.Config the client was built from
// (factory.Options.RESTConfig), or a factory.Options.ClusterID: the file
// records the cluster its data came from, read once by factory.New, so
// that a file reused against a recreated or another cluster is relisted,
// never served. This package lists and watches through client only; without
// either, the cluster is recorded as unknown.
//
// How a typed informer is built: InformerFor maps the Go type of its
// object to the group/version/kind of client-go's scheme (the resource is
// the kind's conventional plural, checked against client-go's own
// ForResource by the tests) and lists and watches through the typed client
// of the kubernetes.Interface the factory was given (any implementation,
// client-go's fake clientset included), so its watches decode as that
// client does (client-go's: on one goroutine). With WithRESTConfig (the
// config the client was built from) they go through clients built from
// that config instead, as factory.Factory's own, asking for protobuf
// unless the config sets another content type: their watches decode on
// every core, and the bolt store writes each protobuf object's message as
// it arrived instead of marshalling it again. The informer's identity in the
// file records the resource, the kind, the namespace of WithNamespace (for
// namespaced resources) and the selectors the tweak sets, so that
// factories of different scopes never share stored data.
//
// What a tweak may do: WithTweakListOptions' function is called once on an
// empty metav1.ListOptions when an informer is created, and the label and
// field selectors it sets are recorded as the informer's scope. It must
// therefore be deterministic (the same selectors on every call) and set
// only LabelSelector, FieldSelector, Limit or TimeoutSeconds. A tweak that
// sets anything else (ResourceVersion, ResourceVersionMatch,
// SendInitialEvents, Watch, AllowWatchBookmarks) would break the resume
// from the persisted resourceVersion: such a factory serves its informers
// from client-go's in-memory informer, with a log line saying why.
//
// Transforms and index functions across restarts: the file stores
// transformed objects and index entries, and cannot see a function's
// code. It keeps one sample object per informer as the server sent it
// (package factory): when WithTransform's function, or an index function
// given at creation (InformerFor's newFunc), makes something else of it
// than when the stored objects were written, they are relisted, with a
// log line saying why. For the changes the sample does not show, change
// WithTransformVersion when the transform changes meaning (the warm start
// then relists instead of serving objects shaped by the old function),
// and WithIndexVersion when an index function does under the same name
// (its entries are then rebuilt). Indexes added with AddIndexers are
// rebuilt at every start.
//
// Fallback: a type the factory cannot persist (a Go type unknown to
// client-go's scheme, a client without a typed client for it, a store that
// cannot be opened) gets the informer newFunc builds, client-go's, in
// memory, with an error log line naming the type and the cause; Fallbacks
// lists them. It is never silent.
//
// Secrets: f.Core().V1().Secrets() follows the warmcache factory's
// sealing (package factory, Options.Keys): persisted encrypted with a key,
// kept in memory without one, like every resource of Options.Sensitive.
//
// Listers: every typed Lister() (f.Core().V1().Pods().Lister(), ...) and
// ForResource's generic lister are warmcache's listers of client-go's
// interfaces (package listers): their List methods hand the namespace and
// the label selector to the store, which decodes only the objects they
// select, where client-go's lister over the same store reads and decodes
// every object of the store (or of the namespace) on every call. The
// informers of other generated clientsets (custom resources through
// InformerFor) build their listers themselves; give them the store's
// selection with listers.New:
//
//	lister := listers.New[*foov1.Foo](inf.GetIndexer(), foov1.Resource("foo"))
//
// The typed informers, versions and groups are generated from client-go's
// (go generate ./informers; informers/internal/gen).
//
// Lifetime: the Factory owns the factory.Factory it is given. Shutdown
// stops every informer (those of this factory and any other of the
// factory.Factory), waits for them, flushes and closes the file; the
// stop channel of Start need not be closed first.
package informers

//go:generate go run ./internal/gen -out .
