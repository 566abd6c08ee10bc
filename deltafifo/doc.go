// Package deltafifo is the queue between warmcache's reflector (the
// producer) and its informer (the consumer). It plays the role of
// client-go's DeltaFIFO and RealFIFO, adds what a persistent cache needs
// (the safe resourceVersion to persist with each batch, streamed relists,
// ordered bookmarks and a warm-start sync marker), is bounded, and takes a
// context on everything that blocks.
//
// # Producer side
//
// The reflector pushes watch events with Add, Update and Delete (a Delete
// may carry a cache.DeletedFinalStateUnknown), the resourceVersions of
// bookmarks with Bookmark, relists with BeginReplace, ReplacePage (one per
// list page or per chunk of a WatchList stream) and EndReplace (or
// AbortReplace when the list fails), and on a warm start MarkSynced once
// it has caught up with the server (every change made before its start
// is pushed). Resync queues Sync deltas, which carry keys only, for the
// consumer's known objects (client-go's periodic resync).
//
// Options.Capacity bounds the queued deltas plus page objects: a push that
// does not fit blocks until the consumer pops (backpressure on the watch)
// or its context is done, which it returns, queueing nothing.
//
// Queues may also share a Budget (Options.Budget), which bounds their
// depths together, as an informer factory does for all of its informers:
// a push then also waits until the budget has room. An empty queue always
// takes one push and no queue holds more than half the budget, so every
// queue keeps making progress whatever the others hold; Close gives a
// queue's share back. A Pop interrupted by its context takes and gives
// back nothing.
//
// # Consumer side
//
// The informer calls Pop(ctx, max) in a loop. Each call returns one Batch:
//
//   - KindDeltas: up to max keys with all their accumulated deltas, in
//     queue order, and the safe resourceVersion to persist with them (in
//     the same store transaction, invariant 1);
//   - KindReplaceBegin, KindReplacePage (listed objects), KindReplaceEnd
//     (with the list's resourceVersion) or KindReplaceAbort: a relist to
//     stage into the store and commit or discard;
//   - KindSynced: the warm-start marker.
//
// # Segments and ordering
//
// The queue is a sequence of segments. Consecutive Add, Update, Delete,
// Resync and Bookmark pushes form a deltas segment; BeginReplace, its
// pages and its EndReplace form a replace segment; MarkSynced is a marker.
// Segments are popped strictly in the order they were pushed and a batch
// never spans two: deltas pushed before a relist are popped before it,
// deltas pushed after EndReplace after it.
//
// Within a deltas segment, deltas accumulate per key as in client-go's
// DeltaFIFO: a key's deltas are kept in arrival order and the keys are
// ordered by the arrival of their first delta in the segment; two
// consecutive Deleted deltas collapse into one, keeping the one with more
// information (a real final state wins over a
// cache.DeletedFinalStateUnknown); a Sync for a key that has deltas queued
// is dropped. Accumulation never crosses a segment boundary, so a key can
// have deltas in two segments.
//
// Differences from client-go's DeltaFIFO (clientgo_*_test.go runs its
// tests against this queue and shows each one):
//
//   - a Delete for a key the queue and KnownObjects do not hold is queued
//     rather than dropped (popped batches may not be applied yet, so only
//     the consumer knows);
//   - a relist is not turned into deltas: the listed objects are popped as
//     pages of a replace segment, after every delta pushed before it, not
//     as Sync or Replaced deltas (there is no EmitDeltaTypeReplaced), and
//     the queue does not compute the relist's deletions (the consumer's
//     store replace finds the vanished keys and their last state), so
//     KnownObjects is read by Resync only;
//   - Sync deltas carry their key (cache.ExplicitKey), not the object;
//   - bookmarks never appear as deltas (they move the safe
//     resourceVersion instead);
//   - HasSynced waits for the initial relist's KindReplaceEnd to be
//     popped, even when the list was empty (client-go is synced at once by
//     an empty initial Replace);
//   - there is no exported KeyOf, AddIfNotPresent or requeue: a popped
//     batch belongs to the consumer and is never handed back.
//
// # The safe resourceVersion (invariant 1)
//
// A KindDeltas batch's ResourceVersion never runs ahead of an event not yet
// popped, given that the producer pushes events in resourceVersion order,
// as a watch delivers them; a bookmark pushed while nothing is queued is a
// batch with no deltas, so that the consumer persists it. It can lag: a
// batch may hold deltas newer than it, because a key's later deltas are
// coalesced with its first, so after a crash a watch resumed from it may
// replay events the store already holds, which the consumer skips. How it
// is computed is in ARCHITECTURE.md, "The queue's safe resourceVersion".
//
// # Initial sync
//
// HasSynced becomes true when the first KindReplaceEnd or KindSynced batch
// is popped, or at once if the first thing pushed was an Add, Update or
// Delete (client-go's semantic) on a queue without
// Options.InitialResourceVersion: on a warm start the events pushed before
// MarkSynced are the catch-up, and only MarkSynced (or a relist's
// EndReplace) completes the sync. The batches of the initial relist (one
// begun before anything completing the initial sync was pushed; a relist
// retried after an aborted initial one is initial too) have
// IsInInitialList set. A queue whose consumer already holds state
// (Options.InitialResourceVersion set: a warm start) has no initial
// relist: its batches do not carry IsInInitialList, even for a relist
// that completes the sync (after a 410); a consumer that has not told its
// handlers the state it holds yet decides itself what is initial.
//
// # Close and ownership
//
// Close unblocks every producer (they return ErrClosed, as does every
// later push). Pop drains what was queued before Close and then returns
// ErrClosed, as client-go's queues do; to stop at once, cancel Pop's
// context. A replace left open by Close is never ended: a consumer that
// sees ErrClosed in the middle of a relist discards it.
//
// Objects pushed belong to the queue (the Transformer may change them in
// place); the slices of a popped Batch belong to the consumer; nobody
// mutates the objects themselves (invariant 6).
package deltafifo
