package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/wire"
)

// errDropped is returned by write when it gave up on a write that a
// relist will redo.
var errDropped = errors.New("write dropped; a relist will redo it")

// loop is the informer's processing goroutine: the only writer of the
// store and the only distributor of notifications, so that handlers see
// changes in the order the store applied them. Its fields are owned by
// that goroutine.
type loop struct {
	i      *Informer
	q      *deltafifo.Queue
	st     store.Store
	logger klog.Logger
	// rep is the open relist, nil if none.
	rep *relist
	// partial, when set, is the last key a failed warm-start replay
	// delivered: the handlers have not seen the keys after it, and the
	// informer is not synced until a relist has told them.
	partial *string
	// withheld is set while a warm start withholds the stored objects
	// from the handlers until the store has caught up with the server
	// (see warmStart and caughtUp).
	withheld bool
	// checked is set once the store's content is known not to be a
	// damaged file's: its FileChecker gave a sound verdict, or a relist
	// replaced the content with the server's. Replays wait for the
	// verdict until then (waitChecked).
	checked bool
	// servedLate is set when serveLate served a late handler and cleared
	// when a batch is popped: a batch queued meanwhile is handled before
	// the next late handler is served.
	servedLate bool
	// replayDue is set while a warm start that caught up (caughtUp) owes
	// the handlers the store as the initial list (serveCaughtUp).
	replayDue bool
	// ticket is the request for a list gate pass of late handlers or of
	// the caught-up replay, nil if none is pending (lategate.go).
	ticket *lateTicket
}

func newLoop(i *Informer, q *deltafifo.Queue, logger klog.Logger) *loop {
	return &loop{i: i, q: q, st: i.store, logger: logger}
}

// run replays a complete store (warm start), then pops and handles
// batches until ctx is done, the queue is closed or the store fails
// for good.
func (l *loop) run(ctx context.Context) {
	defer l.abortRelist()
	defer l.dropTicket()
	if err := l.warmStart(ctx); err != nil {
		if ctx.Err() == nil {
			l.logger.Error(err, "Warm start replay failed")
		}
		return
	}
	l.i.setLoopState(true)
	defer l.i.setLoopState(false)
	for {
		if err := l.serveCaughtUp(ctx); err != nil {
			if ctx.Err() == nil {
				l.logger.Error(err, "Warm start replay failed")
			}
			return
		}
		if err := l.serveLate(ctx); err != nil {
			if ctx.Err() == nil {
				l.logger.Error(err, "Replay to a new handler failed")
			}
			return
		}
		b, err := l.pop(ctx)
		switch {
		case ctx.Err() != nil, errors.Is(err, deltafifo.ErrClosed):
			return
		case errors.Is(err, context.Canceled):
			continue // interrupted to serve a late handler
		case err != nil:
			l.logger.Error(err, "Pop failed")
			return
		}
		if err := l.handle(ctx, b); err != nil && !errors.Is(err, errDropped) {
			if ctx.Err() == nil {
				l.logger.Error(err, "Stopping: the store cannot be written", "batch", b.Kind.String())
			}
			return
		}
		l.markIfSynced()
		if l.i.afterBatch != nil {
			l.i.afterBatch(b)
		}
	}
}

// markIfSynced marks the informer synced once the queue has synced and
// the handlers have been told the whole store (l.partial nil).
func (l *loop) markIfSynced() {
	if l.q.HasSynced() && l.partial == nil {
		l.i.markSynced()
	}
}

// pop pops a batch; AddEventHandler interrupts it to get a late handler
// served. Late handlers waiting are served first (context.Canceled),
// unless some were served since the last batch and one is queued: that
// batch is taken first, so that handlers added without end (from many
// goroutines, or from handlers' callbacks) never hold up the watch. Pop
// does not block then (the loop is the queue's only consumer), and is not
// interrupted.
func (l *loop) pop(ctx context.Context) (deltafifo.Batch, error) {
	owed := l.servedLate && l.q.Ready()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l.i.mu.Lock()
	if (len(l.i.late) > 0 || l.caughtUpReadyLocked()) && !owed && l.lateGranted() {
		l.i.mu.Unlock()
		return deltafifo.Batch{}, context.Canceled
	}
	if !owed {
		l.i.popCancel = cancel
	}
	l.i.mu.Unlock()
	b, err := l.q.Pop(pctx, l.i.opts.BatchSize)
	l.i.mu.Lock()
	l.i.popCancel = nil
	l.i.mu.Unlock()
	if err == nil {
		l.servedLate = false
	}
	return b, err
}

func (l *loop) handle(ctx context.Context, b deltafifo.Batch) error {
	defer forgetBatch(b)
	switch b.Kind {
	case deltafifo.KindDeltas:
		return l.applyDeltas(ctx, b)
	case deltafifo.KindReplaceBegin:
		return l.beginRelist(ctx, b)
	case deltafifo.KindReplacePage:
		return l.relistPage(ctx, b)
	case deltafifo.KindReplaceEnd:
		return l.endRelist(ctx, b)
	case deltafifo.KindReplaceAbort:
		l.abortRelist()
	case deltafifo.KindSynced:
		return l.caughtUp(ctx)
	}
	return nil
}

// write runs a store write, retrying it with exponential backoff while it
// fails (disk full, read-only file): nothing popped is dropped. The
// failure is logged, reported by Err and the Healthy metric until a write
// succeeds. It gives up on ctx's end, on a closed store (the error is
// returned: the informer stops) and on corrupt data (store.ErrCorrupt: the
// informer relists, which rewrites everything, so the write is dropped and
// errDropped returned).
func (l *loop) write(ctx context.Context, op string, n int, fn func() error) error {
	delay := l.i.opts.ApplyBackoff
	for {
		start := l.i.opts.Clock.Now()
		err := fn()
		l.i.opts.Metrics.Applied(l.i.opts.Clock.Since(start), n, err)
		if err == nil {
			if l.i.Err() != nil {
				l.logger.Info("Store writes succeed again", "op", op)
			}
			l.i.setWriteErr(nil)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		werr := fmt.Errorf("%w: %s: %w", ErrStoreWrite, op, err)
		l.i.setWriteErr(werr)
		switch {
		case errors.Is(err, store.ErrClosed):
			return werr
		case errors.Is(err, store.ErrCorrupt):
			l.i.ReportCorruption(werr)
			return errDropped
		}
		l.logger.Error(werr, "Store write failed; the cache is falling behind the server. Retrying", "op", op, "retryIn", delay)
		l.setWaiting(true) // adders do not wait for a store that fails
		select {
		case <-ctx.Done():
			l.setWaiting(false)
			return ctx.Err()
		case <-l.i.opts.Clock.After(delay):
		}
		l.setWaiting(false)
		delay = min(2*delay, l.i.opts.ApplyBackoffCap)
	}
}

// reportObjects reports the store's size.
func (l *loop) reportObjects() {
	if st, err := l.st.State(); err == nil {
		l.i.opts.Metrics.StoreObjects(st.Objects)
	}
}

// since is a helper for durations on the informer's clock.
func (l *loop) since(t time.Time) time.Duration { return l.i.opts.Clock.Since(t) }

// forgetBatch forgets the wire messages of b's objects (package
// store/wire) once the batch is handled: a store that stores them has
// taken them, and any other store (memory) would otherwise keep each
// message alive as long as its object.
func forgetBatch(b deltafifo.Batch) {
	for _, obj := range b.Objects {
		wire.Forget(obj)
	}
	for _, ds := range b.Deltas {
		for _, d := range ds {
			wire.Forget(d.Object)
		}
	}
}
