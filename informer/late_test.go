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
	case <-time.After(30 * time.Second):
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
	h.relist("10", pod("a", "1"), pod("b", "2"), pod("c", "3"))
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
