package deltafifo

import (
	"context"
	"fmt"
)

// Pop blocks until something is queued and returns one batch from the
// head of the queue:
//
//   - from a deltas segment, a KindDeltas batch with its first max keys
//     and all their deltas, and the safe resourceVersion;
//   - from a replace segment, its KindReplaceBegin, then its pages (a page
//     larger than max is returned in pieces of at most max objects; pages
//     are never merged), then its KindReplaceEnd or KindReplaceAbort;
//   - a KindSynced marker.
//
// A batch never spans two segments. Popping the first KindReplaceEnd or
// KindSynced completes the initial sync (HasSynced).
//
// Pop returns ctx's error (wrapped) if ctx is done before a batch is
// taken; no batch is ever lost to a cancellation. Once the queue is closed
// and everything queued before Close has been popped, it returns ErrClosed.
// max < 1 is an error wrapping ErrInvalidArgument.
func (q *Queue) Pop(ctx context.Context, max int) (Batch, error) {
	if max < 1 {
		return Batch{}, fmt.Errorf("pop: %w: max %d < 1", ErrInvalidArgument, max)
	}
	if err := ctx.Err(); err != nil {
		return Batch{}, fmt.Errorf("pop: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.segs) == 0 {
		if q.closed {
			return Batch{}, fmt.Errorf("pop: %w", ErrClosed)
		}
		if err := q.waitLocked(ctx, &q.dataCh); err != nil {
			return Batch{}, fmt.Errorf("pop: %w", err)
		}
	}
	return q.popLocked(max), nil
}

// popLocked takes one batch from the head segment, which exists.
func (q *Queue) popLocked(max int) Batch {
	s := q.segs[0]
	b := Batch{Kind: s.kind, IsInInitialList: s.initial}
	done := true
	switch s.kind {
	case KindDeltas:
		var n int
		b.Keys, b.Deltas, n = s.take(min(max, s.queuedKeys()))
		q.addDepthLocked(-n)
		if s.queuedKeys() > 0 {
			// Every event pushed before the new head key's first one has
			// been popped (invariant 1).
			b.ResourceVersion = s.items[s.keys[s.head]].prevRV
			done = false
		} else {
			// Everything the segment received has been popped,
			// bookmarks included.
			b.ResourceVersion = s.rv
		}
	case KindReplacePage:
		n := min(max, len(s.objs))
		b.Objects = s.objs[:n:n]
		s.objs = s.objs[n:]
		q.replacePopped += n
		q.addDepthLocked(-n)
		done = len(s.objs) == 0
	case KindReplaceEnd:
		b.ResourceVersion = s.rv
		q.markSyncedLocked()
	case KindSynced:
		q.markSyncedLocked()
	}
	if done {
		q.segs[0] = nil
		q.segs = q.segs[1:]
	}
	return b
}
