package informer

import "context"

// maxLateWaiting is how many handlers added after Run may wait for their
// replay before AddEventHandler waits too: beyond it, an adder waits for
// the processing loop to serve one, so that goroutines adding handlers
// without end pay for the replays they cause, as client-go's adders do
// (its AddEventHandler replays the indexer on the caller's goroutine).
// Below it, adding a handler returns at once.
const maxLateWaiting = 16

// lateFullLocked reports whether an adder must wait for room in the late
// list: the loop is serving late handlers, maxLateWaiting of them wait,
// and the loop itself is not waiting on a handler, the file check or a
// failed write's retry. An adder never waits for a loop that waits, so a
// handler that adds handlers from its callbacks cannot deadlock with a
// replay waiting for that handler; nor while a warm start's replay runs
// (late handlers are not served meanwhile), nor once the loop has exited
// or the informer stopped. i.mu must be held.
func (i *Informer) lateFullLocked() bool {
	return i.started && !i.stopped && i.loopServing && !i.loopWaiting && len(i.late) >= maxLateWaiting
}

// waitLateRoomLocked waits, with i.mu held on entry and return, until
// lateFullLocked is false.
func (i *Informer) waitLateRoomLocked() {
	for i.lateFullLocked() {
		if i.lateRoom == nil {
			i.lateRoom = make(chan struct{})
		}
		ch := i.lateRoom
		i.mu.Unlock()
		<-ch
		i.mu.Lock()
	}
}

// wakeLateLocked wakes the adders waiting for room; each checks again.
// i.mu must be held.
func (i *Informer) wakeLateLocked() {
	if i.lateRoom != nil {
		close(i.lateRoom)
		i.lateRoom = nil
	}
}

// setLoopState records whether the processing loop serves late handlers,
// and wakes the adders waiting for room.
func (i *Informer) setLoopState(serving bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.loopServing, i.loopWaiting = serving, false
	i.wakeLateLocked()
}

// setWaiting records whether the processing loop waits on a handler, the
// file check or a failed write's retry; adders waiting for room go on
// when it starts to.
func (l *loop) setWaiting(waiting bool) {
	l.i.mu.Lock()
	defer l.i.mu.Unlock()
	l.i.loopWaiting = waiting
	if waiting {
		l.i.wakeLateLocked()
	}
}

// pace waits until each of ls has at most bound notifications pending
// (waitAllBelow), recorded as a wait of the loop when one has more, so that
// adders do not wait for a loop that waits on a handler.
func (l *loop) pace(ctx context.Context, ls []*listener, bound int64) error {
	for _, h := range ls {
		if h.pending.Load() > bound {
			l.setWaiting(true)
			defer l.setWaiting(false)
			break
		}
	}
	return waitAllBelow(ctx, ls, bound)
}
