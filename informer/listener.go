package informer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/cache/synctrack"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// crashPause is how long a listener waits after its handler panicked
// before it delivers the next notification, as client-go's
// processorListener does.
const crashPause = time.Second

// noteKind says which handler method a notification calls.
type noteKind uint8

const (
	noteAdd noteKind = iota
	noteUpdate
	noteDelete
)

// note is one notification for a handler. It is a value type so that the
// ring buffer holds no per-notification allocation.
type note struct {
	kind    noteKind
	initial bool // noteAdd: isInInitialList
	old     interface{}
	new     interface{}
}

// listener relays notifications to one ResourceEventHandler, in order, on
// its own goroutine (client-go's processorListener). add never blocks: live
// notifications go into an unbounded buffer so that a slow handler never
// holds up the others. Replays (warm start, late handlers, relists) are
// paced by the caller with waitBelow, so the buffer stays bounded while
// large sets of objects are replayed.
//
// A listener is also the ResourceEventHandlerRegistration returned to the
// caller.
type listener struct {
	handler cache.ResourceEventHandler
	name    string
	// logger is the handler's (HandlerOptions.Logger, else the
	// informer's), unchanged, so that a panic is logged as client-go logs
	// it.
	logger  klog.Logger
	clock   clock.Clock
	tracker *synctrack.SingleFileTracker

	// pending counts queued notifications plus the one being delivered.
	pending atomic.Int64
	// taken counts the notifications delivered, for the slow-replay log.
	taken atomic.Int64
	// slowAfter is how long replays wait before that is logged:
	// slowReplayWarning (tests shorten it).
	slowAfter time.Duration
	// slowWaiting says slow holds a wait, so that a waitBelow that finds
	// the handler within bound only takes mu to clear it.
	slowWaiting atomic.Bool

	// mu guards buf, head, stopped, room, slow and started. The delivering
	// goroutine waits on cond (with mu held) for work or stop.
	mu      sync.Mutex
	cond    *sync.Cond
	buf     []note
	head    int
	stopped bool
	// room, when not nil, is closed (and reset) when pending drops to the
	// pacing bound someone is waiting for, or the listener stops.
	room      chan struct{}
	roomBound int64
	// slow adds up the replays' waits for this handler since a waitBelow
	// last found it within bound, for the slow-replay log: a replay calls
	// waitBelow once per notification, so a slow handler makes many
	// short waits, none of which alone lasts long.
	slow struct {
		waited time.Duration // time blocked, in real time
		warnAt time.Duration // waited at which the next warning is due
		from   int64         // taken when the first wait began
	}
	started bool
	// done is closed when the delivering goroutine has returned (or at
	// stop, if it never started).
	done chan struct{}
	// stopCh is closed by stop; it ends the pause after a panic.
	stopCh chan struct{}

	// resyncMu guards the resync fields (client-go's resyncLock).
	resyncMu              sync.Mutex
	requestedResyncPeriod time.Duration
	resyncPeriod          time.Duration
	nextResync            time.Time
}

var _ cache.ResourceEventHandlerRegistration = (*listener)(nil)

// newListener returns a listener of handler; clk times its resyncs and
// the pause after a panic.
func newListener(logger klog.Logger, handler cache.ResourceEventHandler, name string, requested, period time.Duration, clk clock.Clock) *listener {
	l := &listener{
		handler:               handler,
		name:                  name,
		logger:                logger,
		clock:                 clk,
		tracker:               synctrack.NewSingleFileTracker(name),
		done:                  make(chan struct{}),
		stopCh:                make(chan struct{}),
		requestedResyncPeriod: requested,
		resyncPeriod:          period,
		slowAfter:             slowReplayWarning,
	}
	l.cond = sync.NewCond(&l.mu)
	l.determineNextResync(clk.Now())
	return l
}

// HasSynced reports whether the informer has synced and every
// notification of the initial list (and of this handler's replay, for a
// handler added late) has been delivered to the handler.
func (l *listener) HasSynced() bool { return l.tracker.HasSynced() }

// HasSyncedChecker is HasSynced as a cache.DoneChecker.
func (l *listener) HasSyncedChecker() cache.DoneChecker { return l.tracker }

// add queues n. An initial-list add counts towards HasSynced until it is
// delivered. After stop it does nothing.
func (l *listener) add(n note) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	if n.kind == noteAdd && n.initial {
		l.tracker.Start()
	}
	switch {
	case l.head > 0 && l.head == len(l.buf):
		// Drained: reuse the array, or drop it if a burst grew it.
		if cap(l.buf) > 4096 {
			l.buf = nil
		} else {
			l.buf = l.buf[:0]
		}
		l.head = 0
	case len(l.buf) == cap(l.buf) && l.head >= len(l.buf)/2:
		// Full, with at least half of it delivered: slide the pending
		// notifications to the front instead of growing (a handler that
		// is always a little behind never drains completely).
		n := copy(l.buf, l.buf[l.head:])
		clear(l.buf[n:])
		l.buf, l.head = l.buf[:n], 0
	}
	l.buf = append(l.buf, n)
	l.pending.Add(1)
	l.cond.Signal()
}

// start runs the delivering goroutine in wg.
func (l *listener) start(wg *sync.WaitGroup) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.stopped {
		return
	}
	l.started = true
	wg.Go(l.run)
}

// stop makes the delivering goroutine return after the notification it is
// delivering, dropping the queued ones (client-go drops them too), and
// wakes pacers. It is idempotent.
func (l *listener) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	close(l.stopCh)
	l.buf, l.head = nil, 0
	l.cond.Broadcast()
	l.wakeRoomLocked()
	if !l.started {
		close(l.done)
	}
}

// isStopped reports whether stop was called.
func (l *listener) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}

func (l *listener) wakeRoomLocked() {
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
}

// next waits for the next notification; ok is false once stopped.
func (l *listener) next() (n note, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.head == len(l.buf) && !l.stopped {
		l.cond.Wait()
	}
	if l.stopped {
		return note{}, false
	}
	n = l.buf[l.head]
	l.buf[l.head] = note{} // let the objects go
	l.head++
	return n, true
}

// delivered records that one notification was handled.
func (l *listener) delivered() {
	l.taken.Add(1)
	p := l.pending.Add(-1)
	l.mu.Lock()
	if l.room != nil && p <= l.roomBound {
		l.wakeRoomLocked()
	}
	l.mu.Unlock()
}

// run delivers notifications until the listener stops. After a handler
// panicked (and utilruntime.ReallyCrash is off, so the process lives on)
// it waits crashPause before delivering the next one, as client-go does:
// a handler that panics on every notification does not spin.
func (l *listener) run() {
	defer close(l.done)
	crashed := false
	for {
		n, ok := l.next()
		if !ok {
			return
		}
		if crashed && !l.pause() {
			return
		}
		crashed = !l.deliver(n)
		l.delivered()
	}
}

// pause waits crashPause on the listener's clock; it returns false if the
// listener stopped meanwhile.
func (l *listener) pause() bool {
	t := l.clock.NewTimer(crashPause)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-l.stopCh:
		return false
	}
}

// deliver calls the handler and reports whether it returned. A panic is
// handled by utilruntime.HandleCrashWithLogger with the handler's logger,
// as in client-go: logged ("Observed a panic"), then re-raised unless
// utilruntime.ReallyCrash is off, in which case the notification is
// skipped. An initial-list add counts as delivered either way.
func (l *listener) deliver(n note) (returned bool) {
	defer func() {
		if n.kind == noteAdd && n.initial {
			l.tracker.Finished()
		}
	}()
	defer utilruntime.HandleCrashWithLogger(l.logger)
	switch n.kind {
	case noteAdd:
		l.handler.OnAdd(n.new, n.initial)
	case noteUpdate:
		l.handler.OnUpdate(n.old, n.new)
	case noteDelete:
		l.handler.OnDelete(n.old)
	default:
		utilruntime.HandleErrorWithLogger(l.logger, nil, "Unrecognized notification", "kind", fmt.Sprint(n.kind))
	}
	return true
}

// slowReplayWarning is how long a replay waits for one handler before
// that is logged, and again after each such period: the informer's loop,
// and with it the store and every other handler, waits with the replay.
const slowReplayWarning = 30 * time.Second

// waitBelow blocks while more than bound notifications are pending (and
// the listener runs). It returns ctx's error if ctx is done first. The
// time blocked adds up over the calls until one finds the handler within
// bound; once it exceeds l.slowAfter (slowReplayWarning) that is logged,
// with the notifications the handler took meanwhile, and again after each
// further period, in real time whatever the informer's clock: neither a
// stuck handler nor one that holds a long replay up notification by
// notification is silent.
func (l *listener) waitBelow(ctx context.Context, bound int64) error {
	if l.pending.Load() <= bound {
		l.caughtUp()
		return nil
	}
	for {
		l.mu.Lock()
		if l.stopped || l.pending.Load() <= bound {
			l.mu.Unlock()
			return nil
		}
		if l.room == nil || bound < l.roomBound {
			if l.room != nil {
				l.wakeRoomLocked()
			}
			l.room = make(chan struct{})
			l.roomBound = bound
		}
		ch := l.room
		if !l.slowWaiting.Load() {
			l.slowWaiting.Store(true)
			l.slow.waited, l.slow.warnAt, l.slow.from = 0, l.slowAfter, l.taken.Load()
		}
		warn := time.NewTimer(l.slow.warnAt - l.slow.waited)
		l.mu.Unlock()
		start := time.Now()
		var err error
		select {
		case <-ch:
		case <-warn.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
		warn.Stop()
		l.mu.Lock()
		l.slow.waited += time.Since(start)
		due := l.slow.waited >= l.slow.warnAt
		if due {
			l.slow.warnAt = l.slow.waited + l.slowAfter
		}
		waited, taken := l.slow.waited, l.taken.Load()-l.slow.from
		l.mu.Unlock()
		if due {
			pending := l.pending.Load()
			l.logger.Info("Warning: a replay is waiting for a slow handler, and the informer with it: its store and other handlers are not updated meanwhile, and the watch stalls once the queue is full",
				"handler", l.name, "waited", waited.Round(time.Second), "taken", taken, "pending", pending, "waitingFor", pending-bound)
		}
		if err != nil {
			return err
		}
	}
}

// caughtUp ends the slow-replay log's account of waits: a waitBelow found
// the handler within bound.
func (l *listener) caughtUp() {
	if !l.slowWaiting.Load() {
		return
	}
	l.mu.Lock()
	l.slowWaiting.Store(false)
	l.mu.Unlock()
}

func (l *listener) shouldResync(now time.Time) bool {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	if l.resyncPeriod == 0 {
		return false
	}
	return !now.Before(l.nextResync)
}

func (l *listener) determineNextResync(now time.Time) {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	l.nextResync = now.Add(l.resyncPeriod)
}

func (l *listener) setResyncPeriod(p time.Duration) {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	l.resyncPeriod = p
}
