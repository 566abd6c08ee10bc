package reflector

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultListGatePatience is the default ListGateOptions.Patience.
const DefaultListGatePatience = 5 * time.Second

// ListGate bounds how many relists (and, in package informer, replays of
// a stored resource to its handlers) run at once among the reflectors and
// informers that share it (Options.ListGate), so that the decoded objects
// they hold in flight (pages, queues, batches) do not grow with the
// number of informers: an informer factory gives one to all of its
// informers when it has a memory budget.
//
// A relist holds a pass (Enter) from its first request to its last page
// pushed; what it pushed is then bounded by the queue budget. The gate
// admits Slots passes at once, in the order they asked. So that a stuck
// pass (a handler that never returns blocks its informer's pushes) can
// never keep the others from syncing, a pass that has made no progress
// (ListPass.Progress: objects received, pages pushed, chunks replayed)
// for Patience stops counting against Slots: the next waiter is let in,
// over the bound, and the stalled pass keeps its place if it moves again.
// A pass stalls when it is blocked on what it pushes into (a full queue
// whose handler is stuck) or on a server that sends nothing, holding at
// most a page then.
//
// A ListGate is safe for concurrent use. The zero value is not usable:
// use NewListGate.
type ListGate struct {
	slots    int
	patience time.Duration
	clock    clock.Clock
	metrics  ListGateMetrics

	mu      sync.Mutex
	holders map[*ListPass]struct{}
	waiters []*gateWaiter // in arrival order
}

// ListGateOptions configures NewListGate.
type ListGateOptions struct {
	// Slots is how many passes the gate admits at once; at least 1.
	Slots int
	// Patience is how long a pass may go without progress before it
	// stops counting against Slots. Default DefaultListGatePatience.
	Patience time.Duration
	// Clock measures Patience. Default: the real clock.
	Clock clock.Clock
	// Metrics receives the gate's use. Default: none.
	Metrics ListGateMetrics
}

// ListGateMetrics receives a ListGate's use, per name given to Enter
// (the informer's). Its methods are called without the gate's lock and
// must not block.
type ListGateMetrics interface {
	// Waited reports that name entered after waiting d (0 when a slot
	// was free).
	Waited(name string, d time.Duration)
	// Holding reports that name took a pass (true) or left one. One
	// name may hold more than one pass (an informer's relist and its
	// replay).
	Holding(name string, holding bool)
}

// ListPass is a ListGate's admission, held by one relist or replay until
// Leave. Its methods are safe for concurrent use.
type ListPass struct {
	g    *ListGate
	name string
	last time.Time // of the last progress; guarded by g.mu
	left bool      // guarded by g.mu
}

type gateWaiter struct {
	pass     *ListPass
	admitted chan struct{} // closed once pass holds a slot
}

// NewListGate returns a gate of opts.Slots slots. It returns an error
// wrapping ErrInvalidOptions for fewer than one slot or a negative
// Patience.
func NewListGate(opts ListGateOptions) (*ListGate, error) {
	if opts.Slots < 1 {
		return nil, invalid("ListGate Slots %d: at least 1", opts.Slots)
	}
	if opts.Patience < 0 {
		return nil, invalid("ListGate Patience %v is negative", opts.Patience)
	}
	if opts.Patience == 0 {
		opts.Patience = DefaultListGatePatience
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &ListGate{
		slots: opts.Slots, patience: opts.Patience, clock: opts.Clock, metrics: opts.Metrics,
		holders: map[*ListPass]struct{}{},
	}, nil
}

// Slots returns the number of passes the gate admits at once.
func (g *ListGate) Slots() int { return g.slots }

// Enter waits for a slot and returns the pass that holds it; the caller
// must Leave it. name identifies the caller in the metrics. It returns
// ctx's error, holding nothing, if ctx is done first. A nil gate admits
// at once with a nil pass, whose methods do nothing: callers whose gate
// is optional need no case of their own.
func (g *ListGate) Enter(ctx context.Context, name string) (*ListPass, error) {
	if g == nil {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list gate: %w", err)
	}
	start := g.clock.Now()
	p := &ListPass{g: g, name: name}
	w := &gateWaiter{pass: p, admitted: make(chan struct{})}
	g.mu.Lock()
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	for {
		var expire <-chan time.Time
		var t clock.Timer
		if d, ok := g.untilStall(); ok {
			t = g.clock.NewTimer(d)
			expire = t.C()
		}
		select {
		case <-w.admitted:
			stopTimer(t)
			g.entered(p, g.clock.Since(start))
			return p, nil
		case <-expire:
			g.mu.Lock()
			g.admitLocked()
			g.mu.Unlock()
		case <-ctx.Done():
			stopTimer(t)
			if g.withdraw(w) {
				return nil, fmt.Errorf("list gate: %w", ctx.Err())
			}
			// Admitted meanwhile: give the slot back.
			g.entered(p, g.clock.Since(start))
			p.Leave()
			return nil, fmt.Errorf("list gate: %w", ctx.Err())
		}
	}
}

func stopTimer(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}

func (g *ListGate) entered(p *ListPass, waited time.Duration) {
	if g.metrics != nil {
		g.metrics.Waited(p.name, waited)
		g.metrics.Holding(p.name, true)
	}
}

// withdraw removes w from the waiters; false if it was admitted already.
func (g *ListGate) withdraw(w *gateWaiter) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, x := range g.waiters {
		if x == w {
			g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
			g.admitLocked() // w may have been the head
			return true
		}
	}
	return false
}

// untilStall lets waiters in if it can, then returns how long until the
// first holder that is making progress would stall, if a waiter is left:
// a waiter left here waits for fewer than Slots holders to be making
// progress, so there is one whose stall it can wait for.
func (g *ListGate) untilStall() (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// One instant for both: a holder admitAt counted as moving must be
	// found moving here, or the waiter left would set no timer.
	now := g.clock.Now()
	g.admitAtLocked(now)
	if len(g.waiters) == 0 {
		return 0, false
	}
	var first time.Duration
	found := false
	for h := range g.holders {
		if d := g.patience - now.Sub(h.last); d > 0 && (!found || d < first) {
			first, found = d, true
		}
	}
	return first, found
}

// admitLocked lets waiters in, in order, while fewer than Slots holders
// made progress within Patience. g.mu must be held.
func (g *ListGate) admitLocked() { g.admitAtLocked(g.clock.Now()) }

// admitAtLocked is admitLocked at the instant now.
func (g *ListGate) admitAtLocked(now time.Time) {
	active := 0
	for h := range g.holders {
		if now.Sub(h.last) < g.patience {
			active++
		}
	}
	for len(g.waiters) > 0 && active < g.slots {
		w := g.waiters[0]
		g.waiters = g.waiters[1:]
		w.pass.last = now
		g.holders[w.pass] = struct{}{}
		active++
		close(w.admitted)
	}
}

// Progress records that the pass moved (a page pushed, a chunk replayed),
// so that it counts against the gate's slots for another Patience.
func (p *ListPass) Progress() {
	if p == nil {
		return
	}
	p.g.mu.Lock()
	p.last = p.g.clock.Now()
	p.g.mu.Unlock()
}

// Leave gives the slot back. Calling it again, or on a nil pass, does
// nothing.
func (p *ListPass) Leave() {
	if p == nil {
		return
	}
	g := p.g
	g.mu.Lock()
	if p.left {
		g.mu.Unlock()
		return
	}
	p.left = true
	g.mu.Unlock()
	// Reported while the slot is still taken, so that the metrics never
	// show the next pass in before this one out.
	if g.metrics != nil {
		g.metrics.Holding(p.name, false)
	}
	g.mu.Lock()
	delete(g.holders, p)
	g.admitLocked()
	g.mu.Unlock()
}
