// Package informer is warmcache's cache.SharedIndexInformer: client-go's
// shared informer, handler and HasSynced contract, on a store.Store that
// may live in a bbolt file and survive restarts.
//
// # Where to start
//
// A controller seldom calls New itself: package factory builds informers on
// one cache file (list/watch, store, identity in the file), package informers
// gives them client-go's SharedInformerFactory interface, and the crcache
// module a controller-runtime cache. New is for a ListerWatcher and a store
// of your own (Options.Store: store/memory, or a Store of store/bolt's
// DB.Resource); see Example. The informer then behaves as client-go's: add
// handlers, Run (or RunWithContext), wait for HasSynced, read GetIndexer.
//
// # Pipeline
//
// An Informer runs three kinds of goroutines: the reflector (package
// reflector), which lists and watches and pushes into a deltafifo.Queue;
// one processing loop, which pops batches, writes them to the store and
// hands notifications to the handlers; and one goroutine per handler,
// which calls it. The processing loop is the store's only writer and the
// only distributor of notifications, so every handler sees the changes of
// an object in the order the store applied them, after the store applied
// them (listers never lag a notification).
//
// # Batches and invariant 1
//
// A KindDeltas batch (up to Options.BatchSize keys) is written with one
// store.Apply — one bbolt transaction — together with the batch's safe
// resourceVersion, which never runs ahead of an event still queued. After
// a crash the watch resumes from that resourceVersion and may replay
// events the store already holds: an event whose object is not newer than
// the stored one (k8s.io/apimachinery/pkg/util/resourceversion) is
// skipped, and so is a delete for a key the store does not hold. Handlers
// are told only what changed the store, which is also what client-go's
// DeltaFIFO lets through. Only the keys of the batch are read, and of
// each only its resourceVersion as the store recorded it
// (store.ResourceVersionOf, no decoding, unaffected by a handler that
// mutates its object); the stored object is decoded only when a
// notification needs it (the old object of an update, a resync: Sync
// deltas carry keys only), once, past the store's cache of decoded objects
// (store.GetUncached), so that the writer never evicts what listers read.
// Deletes and skipped replays decode nothing.
//
// # Relists
//
// A relist (a cold start, or a 410 on a warm one) is staged into a
// store.Replace page by page and committed atomically (invariant 2).
// Nothing is read or remembered per listed object meanwhile. After the
// commit the store streams the differences between the content it
// replaced (retained until then: in the file for a bolt store) and the new
// one (store.Replace.Changes), in key order: new keys become adds, keys
// with another resourceVersion updates (the replaced object is OnUpdate's
// old one), unchanged ones produce nothing, and keys that vanished become
// deletes carrying cache.DeletedFinalStateUnknown with the last stored
// state. The replaced content is released once the handlers have been
// handed everything, so a relist holds a bounded number of objects
// however many changed.
//
// A relist into an empty store (a cold start) of a store.Filler is a
// fill instead, as client-go's informer fills its indexer during the
// initial list: each page is written to the store's content (listers see
// the cache grow, marked incomplete and without a resourceVersion until
// the list ends) and then its objects are told to the handlers as adds,
// in page order, paced like a replay, so that a lister called from a
// handler finds the object. The commit records the resourceVersion;
// nothing is read back. A fill that breaks off (a failed list, a 410 on
// a later page) leaves its objects stored and told, and the relist that
// follows diffs against them; a crash before the commit leaves a file
// whose next open discards them (invariant 2). A handler added between
// two pages is replayed what was filled so far and told the later pages.
// A key a list holds twice (which neither a paginated LIST nor a
// WatchList of kube-apiserver produces; only a custom ListerWatcher can)
// is stored once, as its last object, and told as an add and then an
// update, as client-go's informer tells it: a filter of the keys filled
// so far (about 4 bytes a key, for the fill's length) finds the repeats
// without a store read per key.
// A store without the ability, or a relist after a warm start that told
// the handlers part of a store, streams the committed content as adds.
//
// # Warm start
//
// A warm start is a cold start, only cheaper (invariant 7 of
// ARCHITECTURE.md). When Run finds the store complete (store.State), the
// reflector resumes the watch from the persisted resourceVersion instead
// of listing, after one LIST of at most one object that reads the server's
// resourceVersion (reflector.Options.ResumeCheck). The changes the server
// made while the informer was down arrive on that watch and are applied
// to the store without notifications; once the watch has caught up with
// the server's resourceVersion (the queue's Synced marker, see package
// reflector), the store is replayed to the handlers as the initial list
// (isInInitialList true), streamed, and HasSynced becomes true: the
// handlers are told exactly what a LIST at the start would have given
// (an object deleted while the informer was down never appears, one
// updated appears once at its current version), and the store holds it.
// A 410 on the resumed watch, a store ahead of the server's (relisted,
// never replayed), a server without bookmarks (relisted) or a corruption
// report before the check end the same way: the relist's objects are the
// initial list. While the check cannot reach the server nothing is told
// and HasSynced stays false. Options.WarmStartChanges instead tells the
// stored objects at once as the initial list and the changes since as
// live events; HasSynced still waits for the catch-up.
//
// # Replays are paced, live events are not
//
// Each handler has an unbounded buffer (client-go's processorListener), so
// a slow handler never holds up the others or the watch. Replays — warm
// start, a handler added after Run (it gets the store's content as
// initial-list adds, then live changes), a relist's changes — wait
// whenever a handler has more than Options.ReplayPending notifications
// pending, so memory stays flat however many objects are replayed.
//
// The price: while a replay waits for a handler, so does the informer's
// processing loop, and with it the store and every other handler; once the
// queue is full the watch waits too. A handler that blocks (on a lock, on
// the informer's own sync, on a slow call) therefore holds the informer up
// during replays, where client-go's would grow its buffer instead. Waits
// for one handler add up until it catches up (a slow handler holds a
// replay up one notification at a time): over 30 seconds in all is logged
// as a warning naming the handler, with what it took meanwhile, and again
// every 30 seconds until it catches up. Keep
// handlers quick: queue the work (a workqueue) and return.
//
// # Failures
//
// A store write that fails (disk full, read-only file) is retried with
// exponential backoff, never dropped; meanwhile Err returns the error
// (wrapping ErrStoreWrite), the store_healthy metric is 0, the store
// serves its last committed state and the queue fills, which stalls the
// watch. Data the store cannot decode (a bolt store calls its
// OnCorruption hook, which should call ReportCorruption; package factory
// wires it) makes the informer relist, which rewrites the content.
//
// # Differences from client-go
//
// The clientgo_*_test.go files run client-go's own shared informer tests
// (tools/cache at v0.36.3) on the memory and the bolt store. Where this
// package differs from client-go on purpose:
//
//   - A bolt store hands out decoded copies: the object a handler gets, or
//     a lister returns, is never the pointer the ListerWatcher produced,
//     and two reads return two copies. Their content is the same. A resync
//     still hands one object as OnUpdate's old and new.
//   - A relist notifies only what changed (see Relists): an object whose
//     resourceVersion did not change produces no notification, where
//     client-go sends handlers due for a resync an update.
//   - A handler added after Run is replayed the store by the processing
//     goroutine, not by AddEventHandler: the call returns at once and the
//     registration's HasSynced stays false until the replay is delivered.
//     A queued batch is handled between two late handlers' replays, so
//     that handlers added without end never stall the watch, and once 16
//     late handlers wait for their replays the next AddEventHandler waits
//     for one to be served (never while the processing goroutine waits on
//     a handler, the file check or a failed write's retry, nor while the
//     warm start's replay runs): adders without end pay for the
//     replays they cause, as client-go's, which replay on the caller's
//     goroutine.
//   - Replays (warm start, a late handler, a relist's changes) wait for a
//     handler that is more than Options.ReplayPending notifications
//     behind, and the informer waits with them (see Replays are paced);
//     client-go's processorListener buffers without bound, so one stuck
//     handler never holds up its informer there. Live watch events are
//     buffered without bound here too.
//   - The queue between the reflector and the store is bounded
//     (Options.QueueCapacity, DefaultQueueCapacity decoded objects), where
//     client-go's DeltaFIFO is not: a full queue stalls the watch. Package
//     factory's clients read a stalled watch's backlog ahead as wire bytes
//     (up to 64 MiB for the whole process), which cost the collector
//     nothing to mark; client-go's leave it in the connection.
//   - An initial-list add whose handler panicked (utilruntime.ReallyCrash
//     off) counts as delivered: the registration still syncs, where
//     client-go's never does (kubernetes#129024). With ReallyCrash on, the
//     panic crashes the process, as client-go's shared informer does.
//   - LastSyncResourceVersion before Run returns the store's persisted
//     resourceVersion (client-go: ""), which a warm start resumes from.
//     The store's resourceVersion (LastStoreSyncResourceVersion) is the
//     watch's progress, read before the transform: where a transform
//     returns objects without metadata, client-go's stays at the last one
//     it could read from a transformed object.
//   - A handler added without HandlerOptions.Logger logs to the informer's
//     logger (Options.Logger), not to klog.Background; a nil handler is
//     refused with an error.
//   - Errors name the informer before client-go's words ("informer pods:
//     handler ... was not added to shared informer because it has stopped
//     already"), and match ErrStarted, ErrStopped or
//     ErrInvalidRegistration. The *cache.Reflector a watch error handler
//     receives carries the reflector's name and type description only.
//
// # Ownership
//
// The informer does not own the store given in Options: the caller closes
// it after Run has returned. A factory.Factory owns its file and stores and
// closes them in Shutdown. Objects handed to handlers and returned by the store
// are shared: nobody may mutate them (invariant 6). An update's old object
// may even share memory with its new one: read from a store that can
// (store.LikeStatesReader for a watch event's update: bolt with the
// protobuf codec, for objects the factory's clients decoded;
// store.SharedChanges for a relist's updates, whose new objects bolt reads
// from its file too), each part the update left as it was (the spec of a
// status update, the unchanged labels) is the new object's value, not a
// decoded copy (Options.UnsharedOldObjects turns that off). Tests check that with
// the mutation detector (Options.DetectMutations, or client-go's switch
// KUBE_CACHE_MUTATION_DETECTOR=true): it keeps a copy of every object handed
// out and panics with a diff when one changes.
package informer
