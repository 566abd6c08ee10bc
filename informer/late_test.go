package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
)

func lateLen(inf *Informer) int {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	return len(inf.late)
}

// Handlers added and removed in a tight loop from several goroutines while
// the informer runs: the late list holds only handlers still registered
// (at most one per goroutine), and the informer stops once its context is
// cancelled although handlers keep coming.
func TestAddRemoveHandlersInALoopThenStop(t *testing.T) {
	src := newSource(t, "a", "b", "c", "d")
	r := runInformer(t, src.Endpoint(podGVK, ""), Options{Store: newMemStore(t)})
	r.waitSynced(t)

	const workers = 4
	var (
		wg     sync.WaitGroup
		rounds atomic.Int64
		mu     sync.Mutex
		errs   []error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	failed := func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), errs...)
	}
	for range workers {
		wg.Go(func() {
			for {
				reg, err := r.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
				if errors.Is(err, ErrStopped) {
					return
				}
				if err != nil {
					fail(fmt.Errorf("add: %w", err))
					return
				}
				if err := r.inf.RemoveEventHandler(reg); err != nil {
					fail(fmt.Errorf("remove: %w", err))
					return
				}
				if n := lateLen(r.inf); n > workers {
					fail(fmt.Errorf("late list holds %d handlers with at most %d registered", n, workers))
					return
				}
				rounds.Add(1)
			}
		})
	}
	// Let the loops run while the informer serves them.
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return rounds.Load() >= 2000 || len(failed()) > 0, nil
	})
	if err != nil {
		t.Fatalf("handler loops made %d rounds: %v", rounds.Load(), err)
	}

	r.cancel()
	select {
	case <-r.done:
	case <-time.After(testkit.Timeout()):
		t.Fatalf("RunWithContext did not return after cancel; late list holds %d", lateLen(r.inf))
	}
	wg.Wait() // every loop ends on ErrStopped
	for _, err := range failed() {
		t.Error(err)
	}
	if n := lateLen(r.inf); n != 0 {
		t.Fatalf("late list holds %d handlers after stop", n)
	}
	if !r.inf.IsStopped() {
		t.Fatal("informer not stopped")
	}
}

// A handler removed before the processing loop served it leaves the late
// list at once.
func TestRemoveLateHandlerBeforeServed(t *testing.T) {
	inf := newTestInformer(t, Options{ReplayPending: 1})
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3"))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd })
	// A blocked late handler holds the processing loop in its paced
	// replay, so that the next handlers wait in the late list.
	blocker := newRecorder()
	blocker.Block = make(chan struct{})
	release := sync.OnceFunc(func() { close(blocker.Block) })
	t.Cleanup(release) // before the harness stops, should the test fail
	if _, err := inf.AddEventHandler(blocker); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return lateLen(inf) == 0, nil
	})
	if err != nil {
		t.Fatal("the blocked handler was never taken from the late list")
	}
	var regs []cache.ResourceEventHandlerRegistration
	for range 3 {
		reg, err := inf.AddEventHandler(newRecorder())
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	if n := lateLen(inf); n != 3 {
		t.Fatalf("late list holds %d handlers, want the 3 waiting", n)
	}
	for _, reg := range regs {
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
	}
	if n := lateLen(inf); n != 0 {
		t.Fatalf("late list holds %d removed handlers", n)
	}
	release()
	blocker.WaitFor(t, 3)
}

// scanFailsOnce is a store whose first Scan fails after delivering after
// objects, as a store that finds an undecodable item midway does.
type scanFailsOnce struct {
	store.Store
	after  int
	failed atomic.Bool
}

func (s *scanFailsOnce) Scan(ctx context.Context, fn store.ScanFunc) error {
	if s.failed.Swap(true) {
		return s.Store.Scan(ctx, fn)
	}
	n := 0
	return s.Store.Scan(ctx, func(key string, obj interface{}) error {
		if n == s.after {
			return fmt.Errorf("key %q: %w", key, errUndecodable)
		}
		n++
		return fn(key, obj)
	})
}

// A handler added after a warm-start replay stopped midway, before the
// relist that follows, is replayed the keys the other handlers were told
// only: the relist then tells both the same changes and the same adds,
// and neither is told an object twice or one the relist dropped.
//
// By default the warm start replays the store once it has caught up (the
// reflector's MarkSynced); with Options.WarmStartChanges at once. Both
// replays stop midway alike.
func TestLateHandlerAfterAWarmStartStoppedMidway(t *testing.T) {
	for _, changes := range []bool{false, true} {
		t.Run(fmt.Sprintf("changes=%v", changes), func(t *testing.T) { testLateAfterStoppedMidway(t, changes) })
	}
}

func testLateAfterStoppedMidway(t *testing.T, changes bool) {
	// The replay fails at the 131st object; it hands objects over in
	// chunks, so the handlers were told some of the ones before it.
	const stored, failAt = 140, 130
	var objs []interface{}
	for i := range stored {
		objs = append(objs, testkit.Pod(fmt.Sprintf("p%03d", i), fmt.Sprint(i+1)))
	}
	st := &scanFailsOnce{Store: newMemStore(t), after: failAt}
	if err := st.Replace(objs, "1000"); err != nil {
		t.Fatal(err)
	}
	inf := newTestInformer(t, Options{Store: st, WarmStartChanges: changes})
	early := newRecorder()
	if _, err := inf.AddEventHandler(early); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	late := newRecorder()
	if _, err := inf.AddEventHandler(late); err != nil {
		t.Fatal(err)
	}
	waitLateServed(t, inf)
	if !changes {
		if n := len(early.Snapshot()) + len(late.Snapshot()); n != 0 {
			t.Fatalf("%d notifications before the warm start caught up, want none", n)
		}
		h.must(h.q.MarkSynced(h.ctx))
		h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindSynced })
	}
	told := len(early.Snapshot())
	if told < 3 || told > failAt {
		t.Fatalf("the warm start told %d objects before failing at the %dth: the test needs at least 3", told, failAt+1)
	}
	var want []event
	for i := range told {
		want = append(want, event(fmt.Sprintf("add ns/p%03d@%d initial=true", i, i+1)))
	}
	equalEvents(t, early.Snapshot(), want)
	equalEvents(t, late.Snapshot(), want)

	// The relist: p001 changed and p002 is gone (both told), p138 changed
	// and p139 is gone (never told), p200 is new.
	var listed []interface{}
	for i := range stored {
		switch i {
		case 1, 138:
			listed = append(listed, testkit.Pod(fmt.Sprintf("p%03d", i), fmt.Sprint(2000+i)))
		case 2, 139:
		default:
			listed = append(listed, objs[i])
		}
	}
	listed = append(listed, testkit.Pod("p200", "3000"))
	h.relist("4000", listed...)
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd })
	want = append(want, "update ns/p001@2 -> ns/p001@2001", "delete dfsu(ns/p002@3)")
	for i := told; i < 138; i++ {
		want = append(want, event(fmt.Sprintf("add ns/p%03d@%d initial=true", i, i+1)))
	}
	want = append(want, "add ns/p138@2138 initial=true", "add ns/p200@3000 initial=true")
	equalEvents(t, early.Snapshot(), want)
	equalEvents(t, late.Snapshot(), want)
}

// Late handlers that keep coming must not starve the watch: each handler,
// on its first add, adds the next one, and ReplayPending 1 makes the
// replay of three objects wait for that first add to return, so a new
// handler is always waiting when one is served. Between two late handlers'
// replays the processing loop handles a queued batch (found by
// client-go's TestSharedInformerHandlerAbuse, whose hundred goroutines
// adding handlers held the loop in its replays while the watch stalled).
func TestLateHandlersWithoutEndDoNotStarveTheWatch(t *testing.T) {
	inf := newTestInformer(t, Options{ReplayPending: 1})
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3"))
	h.waitIdle("11")

	var (
		chain  atomic.Bool
		served atomic.Int64
		mu     sync.Mutex
		errs   []error
	)
	chain.Store(true)
	var next func() cache.ResourceEventHandler
	next = func() cache.ResourceEventHandler {
		var once sync.Once
		return cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
			once.Do(func() {
				served.Add(1)
				if !chain.Load() {
					return
				}
				if _, err := inf.AddEventHandler(next()); err != nil && !errors.Is(err, ErrStopped) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}}
	}
	if _, err := inf.AddEventHandler(next()); err != nil {
		t.Fatal(err)
	}
	// The chain is under way.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return served.Load() >= 3, nil
	}); err != nil {
		t.Fatalf("the chain of late handlers did not start: %d served", served.Load())
	}
	h.must(h.q.Add(h.ctx, testkit.Pod("d", "12")))
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, ok, err := inf.GetStore().GetByKey("ns/d")
		return ok || err != nil, err
	})
	chain.Store(false)
	if err != nil {
		t.Fatalf("a queued add was not applied while late handlers kept coming (%d served): %v", served.Load(), err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}
