package informer

import (
	"context"
	"flag"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/handlertest"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/memory"
)

// TestMain runs every informer of the package's tests with the mutation
// detector on (invariant 6), as client-go's tests run theirs, unless
// KUBE_CACHE_MUTATION_DETECTOR says otherwise or benchmarks run (the
// detector's copies would be measured with them).
func TestMain(m *testing.M) {
	if os.Getenv(envKillChild) != "" {
		os.Exit(killChildMain())
	}
	flag.Parse()
	if _, set := os.LookupEnv(EnvMutationDetector); !set && flag.Lookup("test.bench").Value.String() == "" {
		if err := os.Setenv(EnvMutationDetector, "true"); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}

// The recorder and its events are internal/handlertest's.
type (
	event    = handlertest.Event
	recorder = handlertest.Recorder
)

var (
	newRecorder  = handlertest.NewRecorder
	describeObj  = handlertest.Describe
	equalEvents  = func(t *testing.T, got, want []event) { t.Helper(); handlertest.EqualEvents(t, got, want) }
	diffMaps     = handlertest.DiffMaps
	sortedEvents = handlertest.SortedEvents
)

// harness runs an informer's processing loop on a queue the test pushes
// to by hand (no reflector).
type harness struct {
	t      *testing.T
	inf    *Informer
	q      *deltafifo.Queue
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	stopOnce sync.Once

	mu      sync.Mutex
	handled []deltafifo.Batch
}

func newMemStore(t *testing.T) store.Store {
	t.Helper()
	s, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// nopLW is a ListerWatcher for informers whose reflector never runs.
var nopLW = &cache.ListWatch{}

func newTestInformer(t *testing.T, opts Options) *Informer {
	t.Helper()
	if opts.Store == nil {
		opts.Store = newMemStore(t)
	}
	if opts.Logger == nil {
		l := ktesting.NewLogger(t, ktesting.NewConfig())
		opts.Logger = &l
	}
	inf, err := New(nopLW, &corev1.Pod{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// recordedHarness is a test informer on st with a recorder as its one
// handler, started on a hand-driven queue (startHarness).
func recordedHarness(t *testing.T, st store.Store) (*recorder, *harness) {
	t.Helper()
	inf := newTestInformer(t, Options{Store: st})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	return rec, startHarness(t, inf)
}

// startHarness starts inf's processing loop and handlers on a hand-driven
// queue, as RunWithContext would but without a reflector.
func startHarness(t *testing.T, inf *Informer) *harness {
	t.Helper()
	logger := *inf.opts.Logger
	q, err := inf.start(logger)
	if err != nil {
		t.Fatal(err)
	}
	// No reflector, so no resume check: a warm start replays at once.
	inf.resume.decide(startResumed)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, inf: inf, q: q, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	inf.afterBatch = func(b deltafifo.Batch) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.handled = append(h.handled, b)
	}
	inf.proc.run()
	go func() {
		defer close(h.done)
		newLoop(inf, q, logger).run(ctx)
	}()
	t.Cleanup(h.stop)
	return h
}

// stop stops the loop and the informer (its handlers, and the mutation
// detector's last check); calls after the first do nothing.
func (h *harness) stop() {
	h.stopOnce.Do(func() {
		h.cancel()
		h.q.Close()
		<-h.done
		h.inf.stop()
	})
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// relist pushes a complete relist of objs at rv.
func (h *harness) relist(rv string, objs ...interface{}) {
	h.t.Helper()
	h.must(h.q.BeginReplace(h.ctx))
	if len(objs) > 0 {
		h.must(h.q.ReplacePage(h.ctx, objs))
	}
	h.must(h.q.EndReplace(h.ctx, rv))
}

// waitIdle pushes a bookmark at rv and waits until the loop has handled
// it (so every earlier batch is applied and distributed) and every
// listener has delivered what it was given.
func (h *harness) waitIdle(rv string) {
	h.t.Helper()
	h.must(h.q.Bookmark(h.ctx, rv))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindDeltas && b.ResourceVersion == rv })
}

// waitBatch waits until the loop has handled a batch matching match, then
// until every listener is idle.
func (h *harness) waitBatch(match func(deltafifo.Batch) bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, b := range h.handled {
			if match(b) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		h.t.Fatalf("batch not handled: %v", err)
	}
	h.waitListenersIdle()
}

func (h *harness) waitListenersIdle() {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return listenersIdle(h.inf), nil
	})
	if err != nil {
		h.t.Fatalf("listeners not idle: %v", err)
	}
}

// listenersIdle reports whether every listener of inf has delivered what
// it was given.
func listenersIdle(inf *Informer) bool {
	inf.proc.mu.RLock()
	defer inf.proc.mu.RUnlock()
	for l := range inf.proc.listeners {
		if l.pending.Load() != 0 {
			return false
		}
	}
	return true
}
