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
// # What handlers see
//
// One processing loop pops batches of the reflector's events from a
// deltafifo.Queue, writes each batch to the store with its resourceVersion
// (invariant 1) and hands the notifications to the handlers, one goroutine
// each. It is the store's only writer, so every handler sees the changes of
// an object in the order the store applied them, after it applied them
// (listers never lag a notification), and only what changed the store: an
// event a resumed watch replays that is not newer than the stored object is
// skipped, as is a delete of a key the store does not hold.
//
// A relist (a cold start, or a 410) is committed atomically (invariant 2)
// and then tells the handlers only the differences: new keys as adds, keys
// with another resourceVersion as updates (the replaced object is the old
// one), vanished keys as deletes carrying cache.DeletedFinalStateUnknown
// with the last stored state. A relist into an empty store fills it page by
// page, as client-go's informer fills its indexer: listers see the cache
// grow, and each page's objects are told as adds once stored.
//
// # Warm start
//
// When Run finds the store complete (store.State), the reflector resumes
// the watch from the persisted resourceVersion after one LIST of at most one
// object (reflector.Options.ResumeCheck, or package reflector's version
// check). The changes made while the informer was down are applied to the
// store without notifications; once the watch has caught up, the store is
// replayed to the handlers as the initial list (isInInitialList true) and
// HasSynced becomes true (invariant 7): the handlers are told what a LIST
// at the start would have given. A relist on the way (a 410, a store ahead
// of the server, a server without bookmarks, a corruption report) ends the
// same way, its objects the initial list. While the check cannot reach the server nothing is told and
// HasSynced stays false. Options.WarmStartChanges instead tells the stored
// objects at once as the initial list and the changes since as live events;
// HasSynced still waits for the catch-up.
//
// # Keep handlers quick
//
// Each handler buffers live events without bound (client-go's
// processorListener). Replays (a warm start, a handler added after Run, a
// relist's changes) wait whenever a handler has more than
// Options.ReplayPending notifications pending, so memory stays flat, and
// while they wait so does the processing loop, the store and every other
// handler; once the queue is full the watch waits too. A handler that
// blocks therefore holds the informer up during replays (a warning names
// it after 30 seconds). Queue the work (a workqueue) and return.
//
// # Failures
//
// A store write that fails (disk full, read-only file) is retried with
// exponential backoff, never dropped; meanwhile Err returns it (wrapping
// ErrStoreWrite), the store_healthy metric is 0, the store serves its last
// committed state and the queue fills, stalling the watch. Data the store
// cannot decode (a bolt store's OnCorruption, which package factory wires
// to ReportCorruption) makes the informer relist.
//
// # Differences from client-go
//
// The clientgo_*_test.go files run client-go's own shared informer tests
// (tools/cache at v0.36.3) on the memory and the bolt store. Where this
// package differs from client-go on purpose:
//
//   - A bolt store hands out decoded copies: the object a handler gets, or
//     a lister returns, is never the pointer the ListerWatcher produced,
//     and two reads return two copies with the same content. A resync
//     still hands one object as OnUpdate's old and new.
//   - A relist notifies only what changed: an object whose resourceVersion
//     did not change produces nothing, where client-go sends handlers due
//     for a resync an update.
//   - A handler added after Run is replayed the store by the processing
//     loop, not by AddEventHandler: the call returns at once and the
//     registration's HasSynced stays false until the replay is delivered.
//     Once 16 late handlers wait for their replays, the next
//     AddEventHandler waits for one to be served.
//   - Replays wait for a slow handler, and the informer with them (see
//     Keep handlers quick), where client-go's buffer without bound.
//   - The queue between the reflector and the store is bounded
//     (Options.QueueCapacity, DefaultQueueCapacity decoded objects): a full
//     queue stalls the watch.
//   - An initial-list add whose handler panicked (utilruntime.ReallyCrash
//     off) counts as delivered: the registration still syncs, where
//     client-go's never does (kubernetes#129024). With ReallyCrash on, the
//     panic crashes the process, as client-go's shared informer does.
//   - LastSyncResourceVersion before Run returns the store's persisted
//     resourceVersion (client-go: ""). LastStoreSyncResourceVersion is the
//     watch's progress, read before the transform (client-go's stays at the
//     last one it could read from a transformed object).
//   - A handler added without HandlerOptions.Logger logs to the informer's
//     logger (Options.Logger), not to klog.Background; a nil handler is
//     refused with an error.
//   - Errors name the informer and match ErrStarted, ErrStopped or
//     ErrInvalidRegistration. The *cache.Reflector a watch error handler
//     receives carries the reflector's name and type description only.
//
// # Ownership
//
// The informer does not own the store given in Options: the caller closes
// it after Run has returned (a factory.Factory closes its stores in
// Shutdown). Objects handed to handlers and returned by the store are
// shared: nobody may mutate them (invariant 6). An update's old object may
// share memory with its new one, in the parts the update left as they were
// (Options.UnsharedOldObjects turns that off). The mutation detector
// (Options.DetectMutations, or client-go's KUBE_CACHE_MUTATION_DETECTOR=true)
// keeps a copy of every object handed out and panics with a diff when one
// changes. ARCHITECTURE.md ("The informer") says how it reads and paces.
package informer
