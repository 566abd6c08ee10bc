package deltafifo

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/warmcache/warmcache/store"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Queue is the queue between a reflector (the producer) and an informer
// (the consumer). See the package documentation for its semantics.
//
// All methods are safe for concurrent use. The queue is meant for one
// producer goroutine (plus Resync, which may run on another) and one
// consumer goroutine calling Pop: with several consumers, batches are still
// handed out in order but may be applied out of order.
type Queue struct {
	opts   Options
	logger klog.Logger

	// mu guards every field below. Helpers that need it held end in
	// Locked. Nothing blocks while holding it: waiting goroutines release
	// it and wait on dataCh or roomCh.
	mu sync.Mutex

	// segs is the queue, oldest first. Consecutive deltas pushes share
	// the tail segment when it is a deltas segment.
	segs []*segment
	// depth is the number of queued deltas plus queued page objects.
	depth int
	// held is what the queue holds of Options.Budget: depth, plus what
	// a push took before it queues it (settleLocked gives back what the
	// push did not use), or 0 once closed.
	held int
	// lastRV is the resourceVersion of the last event pushed that had
	// one (Options.InitialResourceVersion until then).
	lastRV string
	// closed is set by Close.
	closed bool

	// replaceOpen is set between BeginReplace and EndReplace or
	// AbortReplace; replaceGen numbers replaces and replaceInitial says
	// whether the open one is the initial list.
	replaceOpen    bool
	replaceGen     uint64
	replaceInitial bool
	// replaceBegun is set by the first BeginReplace.
	replaceBegun bool
	// replacePopped counts the page objects popped since the last
	// BeginReplace: a relist's room (replaceRoomLocked) grows with it.
	replacePopped int
	// syncPointPushed is set once something that completes the initial
	// sync has been pushed: an EndReplace, a MarkSynced, or an
	// Add/Update/Delete pushed before any replace. A replace begun after
	// it is not the initial list.
	syncPointPushed bool
	// synced is closed once the initial sync is complete (see HasSynced);
	// syncedDone records that it was.
	synced     chan struct{}
	syncedDone bool

	// dataCh, when not nil, is closed (and reset to nil) when a segment is
	// pushed or the queue is closed: Pop waits on it. roomCh likewise when
	// the depth drops, a replace is aborted, or the queue is closed:
	// producers wait on it. They are created only when someone waits.
	dataCh chan struct{}
	roomCh chan struct{}
}

// New returns an empty queue configured by opts.
func New(opts Options) (*Queue, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Queue{
		opts:   opts,
		logger: opts.Logger,
		lastRV: opts.InitialResourceVersion,
		synced: make(chan struct{}),
	}, nil
}

// Close closes the queue. Producers blocked in a push, and every push
// after Close, return ErrClosed. Pop keeps returning what was queued before
// Close and then returns ErrClosed (as client-go's queues do): a consumer
// that wants to stop at once cancels Pop's context instead. Close gives
// the queue's share of Options.Budget back at once, whatever is still
// queued. Close is idempotent.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if b := q.opts.Budget; b != nil {
		b.release(q.held)
		q.held = 0
	}
	q.wakeLocked(&q.dataCh)
	q.wakeLocked(&q.roomCh)
}

// Ready reports whether Pop would return at once: a batch is queued, or
// the queue is closed. For a queue with one consumer, a Ready that
// consumer saw stays true until it pops.
func (q *Queue) Ready() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.segs) > 0 || q.closed
}

// HasSynced reports whether the initial sync is complete: the first
// KindReplaceEnd or KindSynced batch has been popped, or (client-go's
// semantic) the first thing pushed was an Add, Update or Delete, before
// any replace or MarkSynced, on a queue without
// Options.InitialResourceVersion (with it, the events before MarkSynced
// are a warm start's catch-up, and do not complete the sync). A consumer that must also have applied that
// batch tracks that itself.
func (q *Queue) HasSynced() bool {
	select {
	case <-q.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker returns a cache.DoneChecker whose Done channel is
// closed when HasSynced becomes true, for cache.WaitFor and friends.
func (q *Queue) HasSyncedChecker() cache.DoneChecker {
	return syncedChecker{q}
}

type syncedChecker struct{ q *Queue }

func (c syncedChecker) Name() string          { return c.q.opts.Name }
func (c syncedChecker) Done() <-chan struct{} { return c.q.synced }

// Depth returns the number of queued deltas plus queued page objects: the
// quantity Options.Capacity bounds.
func (q *Queue) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.depth
}

// markSyncedLocked completes the initial sync.
func (q *Queue) markSyncedLocked() {
	if !q.syncedDone {
		q.syncedDone = true
		close(q.synced)
	}
}

// wakeLocked wakes every goroutine waiting on *ch.
func (q *Queue) wakeLocked(ch *chan struct{}) {
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}

// waitLocked releases the lock until *ch is closed or ctx is done, then
// retakes it. It returns ctx's error if ctx is done.
func (q *Queue) waitLocked(ctx context.Context, ch *chan struct{}) error {
	if *ch == nil {
		*ch = make(chan struct{})
	}
	c := *ch
	q.mu.Unlock()
	select {
	case <-c:
		q.mu.Lock()
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		return ctx.Err()
	}
}

// replaceWant says in which replace state a push is allowed.
type replaceWant int

const (
	// outsideReplace pushes fail with ErrReplaceInProgress while a
	// replace is open.
	outsideReplace replaceWant = iota
	// insideReplace pushes fail with ErrNoReplace unless one is open.
	insideReplace
)

// stateErrLocked returns ErrClosed, or ErrReplaceInProgress or
// ErrNoReplace per want, when a push must not proceed.
func (q *Queue) stateErrLocked(want replaceWant) error {
	switch {
	case q.closed:
		return ErrClosed
	case want == outsideReplace && q.replaceOpen:
		return ErrReplaceInProgress
	case want == insideReplace && !q.replaceOpen:
		return ErrNoReplace
	}
	return nil
}

// waitRoomLocked waits until n more deltas or objects fit in the queue
// (n < 1 counts as 1: markers wait while the queue is full) and, with a
// Budget, in the budget, from which it takes n (markers take nothing). A
// push larger than Capacity, or than what the budget has left, fits in an
// empty queue. It returns stateErrLocked's error (checked before and after
// every wait) or ctx's error when the push must not proceed; it has taken
// nothing then. A caller that may queue less than n defers settleLocked.
func (q *Queue) waitRoomLocked(ctx context.Context, n int, want replaceWant) error {
	counted := max(n, 1)
	waited := false
	for {
		if err := q.stateErrLocked(want); err != nil {
			return err
		}
		room := q.opts.Capacity
		if want == insideReplace && n > 0 {
			room = q.replaceRoomLocked()
		}
		if q.depth != 0 && q.depth+counted > room {
			if err := q.waitLocked(ctx, &q.roomCh); err != nil {
				return err
			}
			continue
		}
		b := q.opts.Budget
		if b == nil || n < 1 {
			return nil
		}
		ok, freed := b.take(n, q.held, q.depth == 0)
		if ok {
			q.held += n
			return nil
		}
		if !waited {
			waited = true
			b.blocked()
		}
		if err := q.waitBudgetLocked(ctx, freed); err != nil {
			return err
		}
	}
}

// A relist's room grows with what its consumer has taken of it: while a
// replace is open, its pages wait until the queue's depth plus the page
// is at most 1/replaceGrowth of the page objects popped since
// BeginReplace, at least minReplaceRoom, and at most Capacity (a page
// still fits in an empty queue). The objects of a relist in flight, queued
// and being applied, are then a fraction of those already applied, so a
// resource of a few pages is never held whole in the queue while its
// first pages are written; one of more than replaceGrowth times Capacity
// is queued up to Capacity from then on. Package reflector grows a
// WatchList's pages the same way.
const (
	minReplaceRoom = 64
	replaceGrowth  = 8
)

// replaceRoomLocked is the depth a page of the open replace may bring
// the queue to.
func (q *Queue) replaceRoomLocked() int {
	return min(q.opts.Capacity, max(minReplaceRoom, q.replacePopped/replaceGrowth))
}

// waitBudgetLocked releases the lock until the budget frees something
// (freed is closed), the queue's depth drops, the queue is closed or ctx
// is done, then retakes it. It returns ctx's error if ctx is done.
func (q *Queue) waitBudgetLocked(ctx context.Context, freed <-chan struct{}) error {
	if q.roomCh == nil {
		q.roomCh = make(chan struct{})
	}
	room := q.roomCh
	q.mu.Unlock()
	select {
	case <-room:
	case <-freed:
	case <-ctx.Done():
		q.mu.Lock()
		return ctx.Err()
	}
	q.mu.Lock()
	return nil
}

// settleLocked gives back to the budget what the last push took but did
// not queue (a deduplicated delete, a Sync for a key already queued).
func (q *Queue) settleLocked() {
	if b := q.opts.Budget; b != nil && q.held > q.depth && !q.closed {
		b.release(q.held - q.depth)
		q.held = q.depth
	}
}

// pushLocked appends a non-deltas segment to the queue.
func (q *Queue) pushLocked(s *segment, n int) {
	q.segs = append(q.segs, s)
	q.addDepthLocked(n)
	q.wakeLocked(&q.dataCh)
}

// addDepthLocked changes the depth by n and reports it.
func (q *Queue) addDepthLocked(n int) {
	if n == 0 {
		return
	}
	q.depth += n
	q.opts.Metrics.Depth(q.depth)
	if n > 0 {
		q.opts.Metrics.Adds(n)
	} else {
		if b := q.opts.Budget; b != nil && q.held > 0 {
			r := min(-n, q.held)
			b.release(r)
			q.held -= r
		}
		q.wakeLocked(&q.roomCh)
	}
}

// tailDeltasLocked returns the tail segment if it is a deltas segment,
// else appends a new one.
func (q *Queue) tailDeltasLocked() *segment {
	if n := len(q.segs); n > 0 && q.segs[n-1].kind == KindDeltas {
		return q.segs[n-1]
	}
	s := newDeltasSegment(q.lastRV)
	q.segs = append(q.segs, s)
	return s
}

// keyOf returns obj's key; a cache.DeletedFinalStateUnknown has its own.
func (q *Queue) keyOf(obj interface{}) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	return store.KeyOf(q.opts.KeyFunc, obj)
}

// resourceVersioned is implemented by every metav1.Object.
type resourceVersioned interface {
	GetResourceVersion() string
}

// resourceVersionOf returns the resourceVersion an event for obj carries:
// the object's metadata.resourceVersion, or "" for objects without one and
// for a cache.DeletedFinalStateUnknown (whose object is a stale, older
// state).
func resourceVersionOf(obj interface{}) string {
	if o, ok := obj.(resourceVersioned); ok {
		return o.GetResourceVersion()
	}
	return ""
}

// isNil reports whether obj is nil or a typed nil pointer, map, slice or
// interface, which key functions would crash on.
func isNil(obj interface{}) bool {
	if obj == nil {
		return true
	}
	switch v := reflect.ValueOf(obj); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// prepare validates obj, computes its key and resourceVersion and applies
// the Transformer (unless obj is a tombstone or transform is false). Its
// errors name the key but not the operation: callers add it.
func (q *Queue) prepare(obj interface{}, transform bool) (o interface{}, key, rv string, err error) {
	if isNil(obj) {
		return nil, "", "", ErrNilObject
	}
	if key, err = q.keyOf(obj); err != nil {
		return nil, "", "", err
	}
	rv = resourceVersionOf(obj)
	if _, tomb := obj.(cache.DeletedFinalStateUnknown); transform && !tomb && q.opts.Transformer != nil {
		if obj, err = q.opts.Transformer(obj); err != nil {
			return nil, "", "", fmt.Errorf("%q: transform: %w", key, err)
		}
		if isNil(obj) {
			return nil, "", "", fmt.Errorf("%q: transform returned %w", key, ErrNilObject)
		}
	}
	return obj, key, rv, nil
}
