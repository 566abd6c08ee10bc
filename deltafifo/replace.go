package deltafifo

import (
	"context"
	"fmt"
)

// BeginReplace opens a relist: the following ReplacePage calls carry the
// listed objects and EndReplace (or AbortReplace) closes it. Everything
// pushed between BeginReplace and EndReplace forms a replace segment;
// deltas pushed before it are popped before it and deltas pushed after
// EndReplace after it. While a replace is open, Add, Update, Delete,
// Bookmark and MarkSynced fail with ErrReplaceInProgress and Resync does
// nothing. The replace calls must come from one goroutine.
//
// The replace is the initial list (its batches have IsInInitialList set)
// if the consumer started without state (Options.InitialResourceVersion
// empty) and nothing that completes the initial sync was pushed before
// it.
//
// It blocks while the queue is full. It returns an error wrapping
// ErrReplaceInProgress, ErrClosed or ctx's error.
func (q *Queue) BeginReplace(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("begin replace: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.waitRoomLocked(ctx, 0, outsideReplace); err != nil {
		return fmt.Errorf("begin replace: %w", err)
	}
	q.replaceOpen = true
	q.replaceBegun = true
	q.replacePopped = 0
	q.replaceGen++
	q.replaceInitial = !q.syncPointPushed && q.opts.InitialResourceVersion == ""
	q.pushLocked(q.replaceSegmentLocked(KindReplaceBegin), 0)
	return nil
}

func (q *Queue) replaceSegmentLocked(k Kind) *segment {
	return &segment{kind: k, initial: q.replaceInitial, gen: q.replaceGen}
}

// ReplacePage queues listed objects of the open replace. Each is checked
// (ErrNilObject, cache.KeyError) and transformed before anything is
// queued. The queue owns objs afterwards: the Transformer's results are
// written into it and Pop hands out sub-slices of it. An empty objs
// queues nothing. It blocks until the whole page fits (a page larger than
// the room waits for an empty queue): the room of a relist is an eighth
// of the page objects popped since BeginReplace, at least 64 and at most
// Capacity, so that the queue holds a small resource's relist a little at
// a time, and a large one's up to Capacity once eight times that was
// popped. It returns an error wrapping
// ErrNilObject, a cache.KeyError, the Transformer's error, ErrNoReplace,
// ErrClosed or ctx's error; on error nothing is queued.
func (q *Queue) ReplacePage(ctx context.Context, objs []interface{}) error {
	for i, obj := range objs {
		o, _, _, err := q.prepare(obj, true)
		if err != nil {
			return fmt.Errorf("replace page: object %d: %w", i, err)
		}
		objs[i] = o
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replace page: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(objs) == 0 {
		if err := q.stateErrLocked(insideReplace); err != nil {
			return fmt.Errorf("replace page: %w", err)
		}
		return nil
	}
	if err := q.waitRoomLocked(ctx, len(objs), insideReplace); err != nil {
		return fmt.Errorf("replace page: %w", err)
	}
	s := q.replaceSegmentLocked(KindReplacePage)
	s.objs = objs
	q.pushLocked(s, len(objs))
	return nil
}

// EndReplace closes the open replace: the listed objects are the complete
// state at resourceVersion rv, which becomes the queue's last
// resourceVersion (KindReplaceEnd carries it). Listed objects never
// advance the last resourceVersion themselves. It blocks while the queue
// is full. It returns an error wrapping ErrNoReplace, ErrClosed or ctx's
// error.
func (q *Queue) EndReplace(ctx context.Context, rv string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("end replace %s: %w", rv, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.waitRoomLocked(ctx, 0, insideReplace); err != nil {
		return fmt.Errorf("end replace %s: %w", rv, err)
	}
	s := q.replaceSegmentLocked(KindReplaceEnd)
	s.rv = rv
	q.replaceOpen = false
	q.syncPointPushed = true
	q.lastRV = rv
	q.pushLocked(s, 0)
	return nil
}

// AbortReplace abandons the open replace (the list failed; the producer
// will list again). Its pages that were not popped yet are dropped. If its
// KindReplaceBegin was not popped either, the whole replace vanishes from
// the queue; otherwise a KindReplaceAbort batch tells the consumer to
// discard what it staged. The last resourceVersion is unchanged. It does
// not block. It returns an error wrapping ErrNoReplace or ErrClosed.
func (q *Queue) AbortReplace() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return fmt.Errorf("abort replace: %w", ErrClosed)
	}
	if !q.replaceOpen {
		return fmt.Errorf("abort replace: %w", ErrNoReplace)
	}
	q.replaceOpen = false
	// Nothing but this replace's pages can follow its begin marker.
	dropped := 0
	n := len(q.segs)
	for n > 0 && q.segs[n-1].kind == KindReplacePage && q.segs[n-1].gen == q.replaceGen {
		dropped += len(q.segs[n-1].objs)
		q.segs[n-1] = nil
		n--
	}
	begun := true
	if n > 0 && q.segs[n-1].kind == KindReplaceBegin && q.segs[n-1].gen == q.replaceGen {
		q.segs[n-1] = nil
		n--
		begun = false
	}
	q.segs = q.segs[:n]
	q.addDepthLocked(-dropped)
	q.wakeLocked(&q.roomCh)
	q.logger.V(2).Info("Replace aborted", "droppedObjects", dropped, "consumerSawBegin", begun)
	if begun {
		q.pushLocked(q.replaceSegmentLocked(KindReplaceAbort), 0)
	}
	return nil
}
