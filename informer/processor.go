package informer

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// listenerState is what the processor knows about one listener.
type listenerState struct {
	// active listeners receive distributed notifications. A listener added
	// after the informer started is inactive until its replay begins, so
	// that it gets the store's content first and live changes after.
	active bool
	// syncing is set by shouldResync for listeners due for a resync: Sync
	// notifications go to them only.
	syncing bool
}

// processor holds the listeners of an informer and distributes
// notifications to them (client-go's sharedProcessor).
type processor struct {
	// mu guards every field below. distribute takes it for reading; it
	// never blocks while holding it (listener.add does not block).
	mu        sync.RWMutex
	listeners map[*listener]*listenerState
	// running is set while the listeners' goroutines may run (between the
	// start of Run and its end); stopped once Run ended.
	running, stopped bool
	// synced is set once the informer has synced; listeners added later
	// are told at once.
	synced bool
	wg     sync.WaitGroup

	// detector, when set (before the processor is used), watches every
	// distributed object.
	detector *mutationDetector
}

func newProcessor() *processor {
	return &processor{listeners: map[*listener]*listenerState{}}
}

// add registers l, active or not, starting it if the processor runs. It
// returns false if the processor has stopped.
func (p *processor) add(l *listener, active bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	p.listeners[l] = &listenerState{active: active, syncing: true}
	if p.running {
		l.start(&p.wg)
	}
	if p.synced {
		l.tracker.UpstreamHasSynced()
	}
	return true
}

// activate makes l receive distributed notifications; it returns false if
// l was removed.
func (p *processor) activate(l *listener) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.listeners[l]
	if ok {
		st.active = true
	}
	return ok
}

// remove unregisters l and stops it. It reports whether l was registered.
func (p *processor) remove(l *listener) bool {
	p.mu.Lock()
	_, ok := p.listeners[l]
	delete(p.listeners, l)
	p.mu.Unlock()
	if ok {
		l.stop()
	}
	return ok
}

// has reports whether l is registered.
func (p *processor) has(l *listener) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	_, ok := p.listeners[l]
	return ok
}

// active returns the active listeners.
func (p *processor) active() []*listener {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]*listener, 0, len(p.listeners))
	for l, st := range p.listeners {
		if st.active {
			out = append(out, l)
		}
	}
	return out
}

// count returns the number of active listeners.
func (p *processor) count() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n := 0
	for _, st := range p.listeners {
		if st.active {
			n++
		}
	}
	return n
}

// distribute queues n for every active listener; a sync notification only
// for those due for a resync.
func (p *processor) distribute(n note, sync bool) {
	p.detector.watchNote(n)
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l, st := range p.listeners {
		if st.active && (!sync || st.syncing) {
			l.add(n)
		}
	}
}

// run starts every listener's goroutine.
func (p *processor) run() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = true
	for l := range p.listeners {
		l.start(&p.wg)
	}
}

// stop stops every listener and waits for their goroutines. Listeners
// cannot be added afterwards.
func (p *processor) stop() {
	p.mu.Lock()
	p.running, p.stopped = false, true
	ls := p.listeners
	p.listeners = map[*listener]*listenerState{}
	p.mu.Unlock()
	for l := range ls {
		l.stop()
	}
	p.wg.Wait()
}

// markSynced tells every listener, and those added later, that the
// informer has synced.
func (p *processor) markSynced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.synced = true
	for l := range p.listeners {
		l.tracker.UpstreamHasSynced()
	}
}

// shouldResync marks the listeners due for a resync and reports whether
// any is (client-go's sharedProcessor.shouldResync).
func (p *processor) shouldResync(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	any := false
	for l, st := range p.listeners {
		st.syncing = l.shouldResync(now)
		if st.syncing {
			any = true
			l.determineNextResync(now)
		}
	}
	return any
}

// resyncCheckPeriodChanged adjusts every listener's period to a new check
// period (before start only).
func (p *processor) resyncCheckPeriodChanged(logger klog.Logger, check time.Duration) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l := range p.listeners {
		l.setResyncPeriod(determineResyncPeriod(logger, l.requestedResyncPeriod, check))
	}
}

// waitAllBelow waits until each of ls has at most bound notifications
// pending.
func waitAllBelow(ctx context.Context, ls []*listener, bound int64) error {
	for _, l := range ls {
		if err := l.waitBelow(ctx, bound); err != nil {
			return err
		}
	}
	return nil
}

// determineResyncPeriod is client-go's: a handler's requested period,
// raised to the check period, or 0 when the informer does not resync.
func determineResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	if desired == 0 {
		return 0
	}
	if check == 0 {
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", desired)
		return 0
	}
	if desired < check {
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", desired, "resyncCheckPeriod", check)
		return check
	}
	return desired
}
