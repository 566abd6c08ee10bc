package deltafifo

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Add queues an Added delta for obj. It blocks while the queue is full.
// The queue owns obj afterwards (the Transformer may change it in place).
// It returns an error wrapping ErrNilObject, a cache.KeyError, the
// Transformer's error, ErrReplaceInProgress, ErrClosed or ctx's error; on
// error nothing is queued.
func (q *Queue) Add(ctx context.Context, obj interface{}) error {
	return q.pushDelta(ctx, "add", cache.Added, obj)
}

// Update queues an Updated delta for obj, like Add.
func (q *Queue) Update(ctx context.Context, obj interface{}) error {
	return q.pushDelta(ctx, "update", cache.Updated, obj)
}

// Delete queues a Deleted delta for obj, like Add. obj is the final state
// of the object, or a cache.DeletedFinalStateUnknown when it is not known
// (its key is its Key, it carries no resourceVersion and the Transformer
// is not applied to it). Unlike client-go's DeltaFIFO, a delete for a key
// the queue and KnownObjects do not hold is queued, not dropped: batches
// that were popped but not yet applied may still add that key, so the
// consumer, not the queue, decides that a delete is for an unknown object.
func (q *Queue) Delete(ctx context.Context, obj interface{}) error {
	return q.pushDelta(ctx, "delete", cache.Deleted, obj)
}

func (q *Queue) pushDelta(ctx context.Context, op string, t cache.DeltaType, obj interface{}) error {
	obj, key, rv, err := q.prepare(obj, true)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %q: %w", op, key, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.settleLocked() // a deduplicated delete adds nothing
	if err := q.waitRoomLocked(ctx, 1, outsideReplace); err != nil {
		return fmt.Errorf("%s %q: %w", op, key, err)
	}
	if !q.syncPointPushed && !q.replaceBegun && q.opts.InitialResourceVersion == "" {
		// client-go: an Add/Update/Delete before any list means there is
		// no initial list to wait for. Not on a warm start: its events
		// before MarkSynced are the catch-up, which MarkSynced ends.
		q.syncPointPushed = true
		q.markSyncedLocked()
	}
	q.addDeltaLocked(key, cache.Delta{Type: t, Object: obj}, rv)
	return nil
}

// addDeltaLocked queues d for key in the tail deltas segment; rv is the
// event's resourceVersion ("" for none).
func (q *Queue) addDeltaLocked(key string, d cache.Delta, rv string) {
	s := q.tailDeltasLocked()
	n := s.addDelta(key, d, q.lastRV)
	if rv != "" {
		q.lastRV = rv
	}
	s.rv = q.lastRV
	q.addDepthLocked(n)
	q.wakeLocked(&q.dataCh)
}

// Bookmark records that the producer's stream reached resourceVersion rv.
// It is an ordered marker: rv becomes the safe resourceVersion of the
// KindDeltas batch that empties the current deltas segment, so it is
// persisted only after every event pushed before it. A bookmark pushed
// while nothing is queued yields a KindDeltas batch with no deltas and
// ResourceVersion rv. A bookmark whose rv equals the last resourceVersion
// pushed does nothing. It blocks while the queue is full. It returns an
// error wrapping ErrInvalidArgument (empty rv), ErrReplaceInProgress,
// ErrClosed or ctx's error.
func (q *Queue) Bookmark(ctx context.Context, rv string) error {
	if rv == "" {
		return fmt.Errorf("bookmark: %w: empty resourceVersion", ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bookmark %s: %w", rv, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.waitRoomLocked(ctx, 0, outsideReplace); err != nil {
		return fmt.Errorf("bookmark %s: %w", rv, err)
	}
	if rv == q.lastRV {
		// Already delivered, or will be with the segment that carries it.
		return nil
	}
	q.lastRV = rv
	q.tailDeltasLocked().rv = rv
	q.wakeLocked(&q.dataCh)
	return nil
}

// MarkSynced queues a KindSynced marker. On a warm start the producer
// pushes it once the watch from the persisted resourceVersion has caught
// up with the server (every change the server had made before the start
// pushed before it); popping it completes the initial sync (HasSynced). It
// blocks while the queue is full. It returns an error wrapping
// ErrReplaceInProgress, ErrClosed or ctx's error.
func (q *Queue) MarkSynced(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mark synced: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.waitRoomLocked(ctx, 0, outsideReplace); err != nil {
		return fmt.Errorf("mark synced: %w", err)
	}
	q.syncPointPushed = true
	q.pushLocked(&segment{kind: KindSynced}, 0)
	return nil
}

// Resync queues a cache.Sync delta for every key of KnownObjects that has
// no delta queued (client-go's DeltaFIFO semantic: a key with queued
// deltas is skipped, since KnownObjects may hold an older state). It does
// nothing without KnownObjects, or while a replace is open (the store is
// about to be replaced; Resync stops early if a replace begins while it
// runs).
//
// A Sync delta carries its key only, as a cache.ExplicitKey: the consumer
// notifies its handlers with the object it holds when it applies the
// delta (popped batches may not be applied yet, so an object read here
// could be older than the consumer's), so the queue never reads the known
// objects themselves, and a resync decodes each object of a persistent
// store once, in the consumer, rather than twice. A key the consumer no
// longer holds by then is skipped by it. Sync deltas carry no
// resourceVersion and the Transformer is not applied to them.
//
// KnownObjects is read without the queue's lock. Resync blocks while the
// queue is full, so it must not be called from the consumer's goroutine.
// It returns an error wrapping ErrClosed or ctx's error.
func (q *Queue) Resync(ctx context.Context) error {
	if q.opts.KnownObjects == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	if q.replaceIsOpen() {
		q.logger.V(4).Info("Skipping resync while a replace is in progress")
		return nil
	}
	for _, k := range q.opts.KnownObjects.ListKeys() {
		stop, err := q.syncKey(ctx, k)
		if err != nil || stop {
			return err
		}
	}
	return nil
}

func (q *Queue) replaceIsOpen() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.replaceOpen
}

// syncKey queues a Sync delta for key unless it has deltas queued. stop
// is true when a replace began.
func (q *Queue) syncKey(ctx context.Context, key string) (stop bool, err error) {
	if err := ctx.Err(); err != nil {
		return true, fmt.Errorf("resync %q: %w", key, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.settleLocked() // a key already queued adds nothing
	if err := q.waitRoomLocked(ctx, 1, outsideReplace); err != nil {
		if errors.Is(err, ErrReplaceInProgress) {
			q.logger.V(4).Info("Stopping resync: a replace began")
			return true, nil
		}
		return true, fmt.Errorf("resync %q: %w", key, err)
	}
	if q.queuedLocked(key) {
		return false, nil
	}
	q.addDeltaLocked(key, cache.Delta{Type: cache.Sync, Object: cache.ExplicitKey(key)}, "")
	return false, nil
}

// queuedLocked reports whether key has deltas queued in any segment.
func (q *Queue) queuedLocked(key string) bool {
	for _, s := range q.segs {
		if s.kind == KindDeltas {
			if _, ok := s.items[key]; ok {
				return true
			}
		}
	}
	return false
}
