package reflector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// gateRecorder records a ListGate's metrics.
type gateRecorder struct {
	mu      sync.Mutex
	waited  map[string]time.Duration
	holding map[string]int // passes held, by the Holding reports
}

func newGateRecorder() *gateRecorder {
	return &gateRecorder{waited: map[string]time.Duration{}, holding: map[string]int{}}
}

func (r *gateRecorder) Waited(name string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waited[name] = d
}

func (r *gateRecorder) Holding(name string, holding bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if holding {
		r.holding[name]++
	} else {
		r.holding[name]--
	}
}

func (r *gateRecorder) get(name string) (time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waited[name], r.holding[name]
}

// entering is a pending Enter.
type entering struct {
	name string
	done chan struct{}
	pass *ListPass
	err  error
}

func enter(ctx context.Context, g *ListGate, name string) *entering {
	e := &entering{name: name, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.pass, e.err = g.Enter(ctx, name)
	}()
	return e
}

func (e *entering) wait(t *testing.T) *ListPass {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(testkit.Timeout()):
		t.Fatalf("%s: not admitted within %v", e.name, testkit.Timeout())
	}
	if e.err != nil {
		t.Fatalf("%s: Enter: %v", e.name, e.err)
	}
	return e.pass
}

// held returns the number of passes g holds.
func held(g *ListGate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.holders)
}

// waiting waits until n callers wait at g.
func waiting(t *testing.T, g *ListGate, n int) {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout())
	for {
		g.mu.Lock()
		got := len(g.waiters)
		g.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func newGate(t *testing.T, slots int, clk *clocktesting.FakeClock, m ListGateMetrics) *ListGate {
	t.Helper()
	g, err := NewListGate(ListGateOptions{Slots: slots, Clock: clk, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestListGateAdmitsSlotsInOrder checks that the gate admits Slots
// passes at once, lets the waiters in in the order they came as passes
// leave, and reports each one's wait.
func TestListGateAdmitsSlotsInOrder(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	m := newGateRecorder()
	g := newGate(t, 2, clk, m)
	a := enter(ctx, g, "a").wait(t)
	b := enter(ctx, g, "b").wait(t)
	c := enter(ctx, g, "c")
	waiting(t, g, 1)
	d := enter(ctx, g, "d")
	waiting(t, g, 2)
	if n := held(g); n != 2 {
		t.Fatalf("%d passes held with two slots", n)
	}
	clk.Step(time.Second) // less than Patience: a and b still count
	a.Progress()
	b.Progress()
	if _, n := m.get("a"); n != 1 {
		t.Fatalf("a reported holding %d passes, want 1", n)
	}
	a.Leave()
	if _, n := m.get("a"); n != 0 {
		t.Fatalf("a reported holding %d passes after Leave, want 0", n)
	}
	pc := c.wait(t)
	waiting(t, g, 1)
	g.mu.Lock()
	next := g.waiters[0].pass.name
	g.mu.Unlock()
	if next != "d" {
		t.Fatalf("%s waits after c was let in, want d: not in order", next)
	}
	if w, _ := m.get("c"); w != time.Second {
		t.Fatalf("c waited %v, want the 1s the clock moved", w)
	}
	a.Leave() // a second Leave gives nothing back, and reports nothing
	if n := held(g); n != 2 {
		t.Fatalf("%d passes held after a second Leave of one, want 2", n)
	}
	if _, n := m.get("a"); n != 0 {
		t.Fatalf("a reported holding %d passes after a second Leave, want 0", n)
	}
	b.Leave()
	d.wait(t).Leave()
	pc.Leave()
	if w, _ := m.get("a"); w != 0 {
		t.Fatalf("a waited %v with a slot free", w)
	}
}

// TestListGateLetsInPastStalledPasses checks that a pass that made no
// progress for Patience stops counting, so a stuck relist cannot keep the
// others waiting, and that one that keeps moving does count.
func TestListGateLetsInPastStalledPasses(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	g := newGate(t, 1, clk, nil)
	a := enter(ctx, g, "a").wait(t)
	b := enter(ctx, g, "b")
	waiting(t, g, 1)
	for range 3 {
		clk.Step(DefaultListGatePatience / 2)
		a.Progress()
	}
	// a moved within every Patience: b still waits. Wait for b's timer
	// (set for a's next stall) so that the next step fires it.
	waitTimer(t, clk)
	if n := held(g); n != 1 {
		t.Fatalf("%d passes held while a made progress, want a's alone", n)
	}
	clk.Step(DefaultListGatePatience)
	pb := b.wait(t)
	// a moves again: it counts again, so c waits for a or b.
	a.Progress()
	c := enter(ctx, g, "c")
	waiting(t, g, 1)
	a.Leave()
	if n := held(g); n != 1 {
		t.Fatalf("%d passes held after a left, want b's alone: c let in while b made progress", n)
	}
	waiting(t, g, 1)
	pb.Leave()
	c.wait(t).Leave()
}

// waitTimer waits until clk has a timer pending.
func waitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout())
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no timer set on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestListGateEnterCanceled checks that a canceled Enter holds nothing
// and lets the next waiter take its place.
func TestListGateEnterCanceled(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	g := newGate(t, 1, clk, nil)
	a := enter(context.Background(), g, "a").wait(t)
	ctx, cancel := context.WithCancel(context.Background())
	b := enter(ctx, g, "b")
	waiting(t, g, 1)
	c := enter(context.Background(), g, "c")
	waiting(t, g, 2)
	cancel()
	<-b.done
	if !errors.Is(b.err, context.Canceled) || b.pass != nil {
		t.Fatalf("canceled Enter = %v, %v; want no pass and context.Canceled", b.pass, b.err)
	}
	waiting(t, g, 1)
	a.Leave()
	c.wait(t).Leave()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.holders) != 0 {
		t.Fatalf("%d passes held after all left", len(g.holders))
	}
}

func TestNewListGateRejects(t *testing.T) {
	for _, o := range []ListGateOptions{{Slots: 0}, {Slots: 1, Patience: -time.Second}} {
		if _, err := NewListGate(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewListGate(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

// TestRelistsShareListGate checks that reflectors sharing a gate of one
// slot list one at a time: the second sends no request while the first
// is pushing its pages, and is let in once the first stalls for Patience
// (its sink blocked), so a stuck relist never keeps the other from
// syncing.
func TestRelistsShareListGate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	g := newGate(t, 1, clk, nil)
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("p%03d", i)
	}
	srcA := newSource(t, fakesource.Options{}, names...)
	srcB := newSource(t, fakesource.Options{}, names...)
	sinkA, sinkB := newRecorder(), newRecorder()
	release := make(chan struct{})
	var once sync.Once
	blocked := make(chan struct{})
	sinkA.hook = func(ctx context.Context, call string) error {
		if strings.HasPrefix(call, "ReplacePage ") {
			once.Do(func() { close(blocked) })
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	run(t, srcA, sinkA, Options{ListGate: g, Name: "a"})
	<-blocked
	run(t, srcB, sinkB, Options{ListGate: g, Name: "b"})
	waiting(t, g, 1)
	if n := len(srcB.Requests()); n != 0 {
		t.Fatalf("b sent %d requests while a held the only slot", n)
	}
	// a has not pushed a page since it entered: once Patience passes, b
	// is let in and syncs while a is still stuck.
	waitTimer(t, clk)
	clk.Step(DefaultListGatePatience)
	sinkB.waitCall(t, fmt.Sprintf("EndReplace %d", len(names)+1))
	close(release)
	sinkA.waitCall(t, fmt.Sprintf("EndReplace %d", len(names)+1))
}

// TestRelistLeavesGateWhileBackingOff checks that a relist backing off
// after a 429 gives its pass back while it waits, so that the others
// list meanwhile, and takes one again to send the WatchList again.
func TestRelistLeavesGateWhileBackingOff(t *testing.T) {
	gateClock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	g := newGate(t, 1, gateClock, nil)
	src := newSource(t, fakesource.Options{}, "a", "b")
	src.FailWatches(1, fakesource.Fault{Err: fakesource.TooManyRequests(1)})
	sink := newRecorder()
	h := run(t, src, sink, Options{ListGate: g, Name: "r"})
	d := h.clk.nextTimer(t) // backing off
	other := enter(context.Background(), g, "other").wait(t)
	// The reflector waits for the pass to send its WatchList again.
	h.clk.Step(d)
	waiting(t, g, 1)
	if got := count(sink.snapshot(), "BeginReplace"); got != 0 {
		t.Fatalf("%d replaces begun while another held the only pass", got)
	}
	other.Leave()
	sink.waitCall(t, "EndReplace 3")
}

// TestResumeCheckLeavesGateWhileBackingOff checks that a resume check
// whose list failed gives its pass back while it backs off.
func TestResumeCheckLeavesGateWhileBackingOff(t *testing.T) {
	g := newGate(t, 1, clocktesting.NewFakeClock(time.Unix(1000, 0)), nil)
	src := newSource(t, fakesource.Options{}, "a")
	src.FailLists(1, errors.New("no answer"))
	h := run(t, src, newRecorder(), Options{ListGate: g, Name: "r",
		ResumeFrom: func() (string, bool) { return src.ResourceVersion(), true }})
	h.clk.nextTimer(t) // backing off
	enter(context.Background(), g, "other").wait(t).Leave()
}

// TestStoppedDuringResumeCheckLeavesGate checks that a reflector stopped
// while its resume check holds a pass gives it back.
func TestStoppedDuringResumeCheckLeavesGate(t *testing.T) {
	g := newGate(t, 1, clocktesting.NewFakeClock(time.Unix(1000, 0)), nil)
	src := newSource(t, fakesource.Options{}, "a")
	inside, release := make(chan struct{}), make(chan struct{})
	h := run(t, src, newRecorder(), Options{ListGate: g, Name: "r",
		ResumeFrom: func() (string, bool) { return src.ResourceVersion(), true },
		StoredVersions: func(int) (map[string]string, cache.KeyFunc, bool) {
			close(inside)
			<-release
			return nil, nil, false
		}})
	<-inside
	g.mu.Lock()
	held := len(g.holders)
	g.mu.Unlock()
	if held != 1 {
		t.Fatalf("%d passes held during the resume check, want 1", held)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.stop()
	}()
	close(release)
	<-stopped
	enter(context.Background(), g, "next").wait(t).Leave()
}

// tickingClock advances 1ms at every Now, as a real clock does between
// two reads.
type tickingClock struct{ *clocktesting.FakeClock }

func (c tickingClock) Now() time.Time {
	t := c.FakeClock.Now()
	c.FakeClock.Step(time.Millisecond)
	return t
}

// TestListGateWaiterAtTheStallInstant checks that a waiter that arrives
// as the only holder reaches its Patience (the holder counted as moving
// at one read of the clock, stalled at the next) still sets a timer, and
// is let in once the holder has stalled.
func TestListGateWaiterAtTheStallInstant(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	g, err := NewListGate(ListGateOptions{Slots: 1, Clock: tickingClock{fc}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := g.Enter(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Leave()
	g.mu.Lock()
	last := a.last
	g.mu.Unlock()
	// The waiter's next reads: its start, then the admission's and the
	// timer's, which straddled a's stall before they were one read.
	fc.SetTime(last.Add(DefaultListGatePatience - 2*time.Millisecond))
	w := enter(context.Background(), g, "w")
	waitTimer(t, fc)
	fc.Step(time.Hour)
	w.wait(t).Leave()
}

// TestNilListGateAdmits checks that a nil gate (none configured) admits
// at once with a pass whose methods do nothing.
func TestNilListGateAdmits(t *testing.T) {
	var g *ListGate
	p, err := g.Enter(context.Background(), "r")
	if p != nil || err != nil {
		t.Fatalf("nil gate: Enter = %v, %v; want no pass and no error", p, err)
	}
	p.Progress()
	p.Leave()
}
