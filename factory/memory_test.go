package factory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/warmcache/warmcache/factory/internal/watchdecode"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

// gateUse records a list gate's passes: who held one, and the most held
// at once.
type gateUse struct {
	mu      sync.Mutex
	holding map[string]int
	entered map[string]int
	peak    int
}

func newGateUse() *gateUse {
	return &gateUse{holding: map[string]int{}, entered: map[string]int{}}
}

func (g *gateUse) Waited(name string, _ time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entered[name]++
}

func (g *gateUse) Holding(name string, holding bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if holding {
		g.holding[name]++
	} else {
		g.holding[name]--
	}
	n := 0
	for _, h := range g.holding {
		n += h
	}
	g.peak = max(g.peak, n)
}

// reset forgets the passes recorded so far.
func (g *gateUse) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entered, g.peak = map[string]int{}, 0
}

func (g *gateUse) state() (entered map[string]int, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for k, v := range g.entered {
		out[k] = v
	}
	return out, g.peak
}

func memoryFactory(t *testing.T, path, host string, opts Options) *Factory {
	t.Helper()
	l := ktesting.NewLogger(t, ktesting.NewConfig())
	opts.Path = path
	opts.Bolt.Sync = bolt.UnsafeNoSync
	opts.RESTConfig = &rest.Config{Host: host}
	opts.Logger = &l
	f, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMemoryBudgetSetsKnobs checks the split of Options.MemoryBudget over
// the knobs it governs, and that a knob set explicitly keeps its value.
func TestMemoryBudgetSetsKnobs(t *testing.T) {
	const budget = 256 << 20
	f := memoryFactory(t, filepath.Join(t.TempDir(), "f.db"), "http://127.0.0.1:1", Options{MemoryBudget: budget})
	defer f.Shutdown()
	if got, want := *f.opts.Bolt.HotBytes, int64(budget/4); got != want {
		t.Errorf("hot tier %d bytes, want a quarter of the budget, %d", got, want)
	}
	if got, want := *f.opts.Bolt.ReplayHeadroom, int64(budget/8); got != want {
		t.Errorf("replay headroom %d bytes, want an eighth of the budget, %d", got, want)
	}
	// A quarter at 16 KiB per object.
	if got, want := f.QueueBudget().Limit(), budget/4/int(BudgetObjectBytes); got != want {
		t.Errorf("queue budget %d objects, want %d", got, want)
	}
	// A quarter over a page and a batch of 500 objects each.
	if got, want := f.ListGate().Slots(), budget/4/(1000*int(BudgetObjectBytes)); got != want {
		t.Errorf("list gate of %d slots, want %d", got, want)
	}
	if got, want := f.readAhead.Free(), int64(budget/8); got != want {
		t.Errorf("read-ahead budget %d bytes, want %d", got, want)
	}

	gate, err := reflector.NewListGate(reflector.ListGateOptions{Slots: 7})
	if err != nil {
		t.Fatal(err)
	}
	f2 := memoryFactory(t, filepath.Join(t.TempDir(), "f.db"), "http://127.0.0.1:1", Options{
		MemoryBudget: 4 << 30, QueueBudget: 100,
		Bolt:     bolt.Options{HotBytes: ptr.To[int64](0), ReplayHeadroom: ptr.To[int64](1 << 20)},
		Informer: informer.Options{Reflector: reflector.Options{ListGate: gate}},
	})
	defer f2.Shutdown()
	if *f2.opts.Bolt.HotBytes != 0 || *f2.opts.Bolt.ReplayHeadroom != 1<<20 || f2.QueueBudget().Limit() != 100 || f2.ListGate() != gate {
		t.Errorf("explicit knobs changed by MemoryBudget: hot %d, headroom %d, queue budget %d, gate %p (want %p)",
			*f2.opts.Bolt.HotBytes, *f2.opts.Bolt.ReplayHeadroom, f2.QueueBudget().Limit(), f2.ListGate(), gate)
	}
	// The replays' headroom is at most its default.
	f3 := memoryFactory(t, filepath.Join(t.TempDir(), "f.db"), "http://127.0.0.1:1", Options{MemoryBudget: 4 << 30})
	defer f3.Shutdown()
	if got := *f3.opts.Bolt.ReplayHeadroom; got != bolt.DefaultReplayHeadroom {
		t.Errorf("replay headroom %d at a 4 GiB budget, want the default %d", got, bolt.DefaultReplayHeadroom)
	}
	// So is the read-ahead, whose size each stream's chunk queue follows.
	if got := f3.readAhead.Free(); got != watchdecode.DefaultBudgetBytes {
		t.Errorf("read-ahead %d bytes at a 4 GiB budget, want the default %d", got, watchdecode.DefaultBudgetBytes)
	}
	// A budget of a petabyte plans without overflow.
	p := planMemory(1<<50, informer.Options{})
	if p.queueBudget <= 0 || p.slots <= 0 || p.readAhead != watchdecode.DefaultBudgetBytes || p.hotBytes != 1<<48 {
		t.Errorf("plan of a 1 PiB budget: %+v", p)
	}
	// Without a budget, no gate and the defaults.
	f4 := memoryFactory(t, filepath.Join(t.TempDir(), "f.db"), "http://127.0.0.1:1", Options{})
	defer f4.Shutdown()
	if f4.ListGate() != nil || f4.readAhead != nil || f4.QueueBudget().Limit() != DefaultQueueBudget {
		t.Errorf("no MemoryBudget: gate %v, read-ahead %v, queue budget %d", f4.ListGate(), f4.readAhead, f4.QueueBudget().Limit())
	}
}

func TestMemoryBudgetRejects(t *testing.T) {
	for _, b := range []int64{-1, MinMemoryBudget - 1} {
		_, err := New(context.Background(), Options{Path: filepath.Join(t.TempDir(), "f.db"), MemoryBudget: b})
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("MemoryBudget %d: %v, want ErrInvalidOptions", b, err)
		}
	}
}

// TestMemoryBudgetListsOneAtATime runs informers under the smallest
// budget, whose gate has one slot: their cold lists take a pass each, one
// at a time, and every one syncs with all of its objects; after a
// restart their warm starts' replays take one each, one at a time.
func TestMemoryBudgetListsOneAtATime(t *testing.T) {
	old := listGatePatience
	listGatePatience = time.Hour // no pass stalls here: the bound is exact
	defer func() { listGatePatience = old }()
	const informers, perNS = 6, 150
	src := newSource(t)
	for k := range informers {
		addPods(t, src, fmt.Sprintf("ns%02d", k), 0, perNS)
	}
	srv := serveSource(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "f.db")
	use := newGateUse()
	start := func() *Factory {
		f := memoryFactory(t, path, srv.URL, Options{MemoryBudget: MinMemoryBudget, ListGateMetrics: use})
		if f.ListGate().Slots() != 1 {
			t.Fatalf("a gate of %d slots at the smallest budget, want 1", f.ListGate().Slots())
		}
		syncNamespaces(ctx, t, f, informers, perNS)
		return f
	}
	check := func(phase string) {
		t.Helper()
		entered, peak := use.state()
		if peak != 1 {
			t.Errorf("%s: %d passes held at once, want 1", phase, peak)
		}
		if len(entered) != informers {
			t.Errorf("%s: passes taken by %v, want one by each of the %d informers", phase, entered, informers)
		}
	}
	f := start()
	check("cold start")
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	use.reset()
	f = start()
	defer f.Shutdown()
	check("warm start")
}
