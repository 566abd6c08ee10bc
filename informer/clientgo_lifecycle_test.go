package informer

// Ports of client-go's tools/cache/shared_informer_test.go at v0.36.3:
// TestSharedInformerInitializationRace, TestSharedInformerStartRace,
// TestStateSharedInformer, TestAddOnStoppedSharedInformer,
// TestRemoveOnStoppedSharedInformer, TestShutdown and
// TestSharedInformerHandlerAbuse, on the memory and the bolt store.
//
// Adapted: the one-second sleeps after closing the stop channel are waits
// for Run to return (IsStopped must hold by then). HasStarted stands for
// client-go's isStarted, which reads its informer's fields.
// TestSharedInformerInitializationRace waits for its AddEventHandler
// goroutine, so that goleak (TestMain) does not see it. Beyond client-go's
// tests, TestClientGoStateSharedInformer also checks that SetTransform and
// SetWatchErrorHandler fail once started and AddIndexers once stopped, as
// client-go's do, and TestClientGoLastSyncResourceVersion checks
// LastSyncResourceVersion as client-go's informer reports it.

import (
	"context"
	"errors"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// verify that https://github.com/kubernetes/kubernetes/issues/59822 is fixed
func TestClientGoSharedInformerInitializationRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		informer := newSharedInformer(t, sk, source, time.Second)
		listener := newTestListener("raceListener", 0)

		var added sync.WaitGroup
		added.Go(func() {
			_, _ = informer.AddEventHandlerWithResyncPeriod(listener, listener.resyncPeriod)
		})
		stop := runUntil(t, informer)
		added.Wait()
		stop()
	})
}

// TestClientGoSharedInformerStartRace is a regression test to ensure
// there is no race between Run and SetWatchErrorHandler, and Run and
// SetTransform.
func TestClientGoSharedInformerStartRace(t *testing.T) {
	source := newFakeControllerSource(t)
	informer := newSharedInformer(t, cgStores[0], source, time.Second)
	stop := make(chan struct{})
	var setters sync.WaitGroup
	setters.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Set dummy functions, just to test for race
			_ = informer.SetTransform(func(i interface{}) (interface{}, error) {
				return i, nil
			})
			_ = informer.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
			})
		}
	})

	stopInformer := runUntil(t, informer)
	close(stop)
	setters.Wait()
	stopInformer()
}

func TestClientGoStateSharedInformer(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

		informer := newSharedInformer(t, sk, source, time.Second)
		listener := newTestListener("listener", 0, "pod1")
		if _, err := informer.AddEventHandlerWithResyncPeriod(listener, listener.resyncPeriod); err != nil {
			t.Fatal(err)
		}

		if informer.HasStarted() {
			t.Fatalf("informer already started after creation")
		}
		if informer.IsStopped() {
			t.Fatalf("informer already stopped after creation")
		}
		stop := runUntil(t, informer)
		b := &barrier{source: source}
		if !b.ok(t, []*testListener{listener}) {
			t.Fatalf("informer did not report initial objects")
		}

		if !informer.HasStarted() {
			t.Fatalf("informer does not report to be started although handling events")
		}
		if informer.IsStopped() {
			t.Fatalf("informer reports to be stopped although stop channel not closed")
		}
		// Not client-go's test, but client-go's behaviour: what must be
		// set before Run fails afterwards.
		if err := informer.SetTransform(func(o interface{}) (interface{}, error) { return o, nil }); err == nil || !strings.Contains(err.Error(), "informer has already started") {
			t.Errorf("SetTransform after start: %v, want client-go's \"informer has already started\"", err)
		}
		if err := informer.SetWatchErrorHandler(func(*cache.Reflector, error) {}); err == nil || !strings.Contains(err.Error(), "informer has already started") {
			t.Errorf("SetWatchErrorHandler after start: %v, want client-go's \"informer has already started\"", err)
		}

		stop()

		if !informer.IsStopped() {
			t.Fatalf("informer reports not to be stopped although stop channel closed")
		}
		if !informer.HasStarted() {
			t.Fatalf("informer reports not to be started after it has been started and stopped")
		}
		err := informer.AddIndexers(cache.Indexers{"x": cache.MetaNamespaceIndexFunc})
		if err == nil || !strings.HasSuffix(err.Error(), "indexer was not added because it has stopped already") || !errors.Is(err, ErrStopped) {
			t.Errorf("AddIndexers on a stopped informer: %v", err)
		}
	})
}

func TestClientGoLastSyncResourceVersion(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2"}})

		informer := newSharedInformer(t, sk, source, 0)
		listener := newTestListener("listener", 0, "pod1", "pod2")
		if _, err := informer.AddEventHandler(listener); err != nil {
			t.Fatal(err)
		}
		// client-go: "" before Run.
		if rv := informer.LastSyncResourceVersion(); rv != "" {
			t.Errorf("LastSyncResourceVersion before Run = %q, want \"\"", rv)
		}
		stop := runUntil(t, informer)
		waitDone(t, "informer", informer.HasSyncedChecker())
		// The list's resourceVersion: two adds.
		if rv := informer.LastSyncResourceVersion(); rv != "2" {
			t.Errorf("LastSyncResourceVersion after the list = %q, want \"2\"", rv)
		}
		// A watch event handed to a handler was seen by the reflector.
		pod3 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod3"}}
		source.Add(pod3)
		listener.setExpected("pod1", "pod2", "pod3")
		b := &barrier{source: source}
		b.ok(t, []*testListener{listener})
		// The reflector records an event's resourceVersion once the queue
		// took it, not synchronised with the handlers (as client-go's): a
		// handler may see the barrier first.
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			return informer.LastSyncResourceVersion() == "4", nil
		})
		if err != nil {
			t.Errorf("LastSyncResourceVersion after pod3 and a barrier = %q, want \"4\"", informer.LastSyncResourceVersion())
		}
		// A relist's: pod4 is seen by the relist only.
		source.AddDropWatch(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod4"}})
		source.ResetWatch()
		listener.setExpected("pod1", "pod2", "pod3", "pod4")
		err = wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			return listener.satisfiedExpectations() && informer.LastSyncResourceVersion() == "5", nil
		})
		if err != nil {
			t.Errorf("after a relist at 5: LastSyncResourceVersion %q, listener got %v", informer.LastSyncResourceVersion(), listener.received())
		}
		stop()
		if rv := informer.LastSyncResourceVersion(); rv != "5" {
			t.Errorf("LastSyncResourceVersion after stop = %q, want \"5\"", rv)
		}
	})
}

func TestClientGoAddOnStoppedSharedInformer(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

		informer := newSharedInformer(t, sk, source, time.Second)
		listener := newTestListener("listener", 0, "pod1")
		stop := runUntil(t, informer)
		stop()

		if !informer.IsStopped() {
			t.Fatalf("informer reports not to be stopped although stop channel closed")
		}

		_, err := informer.AddEventHandlerWithResyncPeriod(listener, listener.resyncPeriod)
		if err == nil {
			t.Fatalf("stopped informer did not reject add handler")
		}
		if !strings.HasSuffix(err.Error(), "was not added to shared informer because it has stopped already") {
			t.Fatalf("adding handler to a stopped informer yields unexpected error: %s", err)
		}
	})
}

func TestClientGoRemoveOnStoppedSharedInformer(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

		informer := newSharedInformer(t, sk, source, time.Second)
		listener := newTestListener("listener", 0, "pod1")
		handle, err := informer.AddEventHandlerWithResyncPeriod(listener, listener.resyncPeriod)
		if err != nil {
			t.Fatalf("informer did not add handler: %s", err)
		}
		stop := runUntil(t, informer)
		stop()

		if !informer.IsStopped() {
			t.Fatalf("informer reports not to be stopped although stop channel closed")
		}
		if err := informer.RemoveEventHandler(handle); err != nil {
			t.Fatalf("informer does not remove handler on stopped informer: %v", err)
		}
	})
}

// TestClientGoShutdown depends on goleak.VerifyTestMain (TestMain) to
// verify that all goroutines really have stopped in the different
// scenarios.
func TestClientGoShutdown(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		t.Run("no-context", func(t *testing.T) {
			source := newFakeControllerSource(t)
			informer := newSharedInformer(t, sk, source, time.Second)
			handler, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(_ any) {},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := informer.RemoveEventHandler(handler); err != nil {
					t.Error(err)
				}
			}()
			stop := runUntil(t, informer)
			defer stop()
			waitDone(t, "informer", informer.HasSyncedChecker())
		})

		t.Run("no-context-later", func(t *testing.T) {
			source := newFakeControllerSource(t)
			informer := newSharedInformer(t, sk, source, time.Second)
			stop := runUntil(t, informer)
			defer stop()
			waitDone(t, "informer", informer.HasSyncedChecker())

			handler, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(_ any) {},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := informer.RemoveEventHandler(handler); err != nil {
				t.Error(err)
			}
		})

		t.Run("no-run", func(t *testing.T) {
			source := newFakeControllerSource(t)
			informer := newSharedInformer(t, sk, source, time.Second)
			if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(_ any) {},
			}); err != nil {
				t.Fatal(err)
			}
			// At this point, neither informer nor handler have any
			// goroutines running and it doesn't matter that nothing gets
			// stopped or removed.
		})
	})
}

// Shows that many concurrent goroutines can be manipulating shared
// informer listeners without tripping it up. There are not really many
// assertions in this test. Meant to be run with -race to find race
// conditions.
func TestClientGoSharedInformerHandlerAbuse(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		informer := newSharedInformer(t, sk, source, time.Second)

		ctx, cancel := context.WithCancel(context.Background())
		informerStop := runUntil(t, informer)
		defer cancel()

		worker := func() {
			// Keep adding and removing handler
			// Make sure no duplicate events?
			funcs := cache.ResourceEventHandlerDetailedFuncs{
				AddFunc:    func(obj interface{}, isInInitialList bool) {},
				UpdateFunc: func(oldObj, newObj interface{}) {},
				DeleteFunc: func(obj interface{}) {},
			}
			handles := []cache.ResourceEventHandlerRegistration{}

			for {
				select {
				case <-ctx.Done():
					return
				default:
					switch rand.Intn(2) {
					case 0:
						// Register handler again
						reg, err := informer.AddEventHandlerWithResyncPeriod(funcs, 1*time.Second)
						if err != nil {
							if strings.Contains(err.Error(), "stopped already") {
								// test is over
								return
							}
							t.Errorf("failed to add handler: %v", err)
							return
						}
						handles = append(handles, reg)
					case 1:
						//  Remove a random handler
						if len(handles) == 0 {
							continue
						}

						idx := rand.Intn(len(handles))
						err := informer.RemoveEventHandler(handles[idx])
						if err != nil {
							if strings.Contains(err.Error(), "stopped already") {
								// test is over
								return
							}
							t.Errorf("failed to remove handler: %v", err)
							return
						}
						handles = append(handles[:idx], handles[idx+1:]...)
					}
				}
			}
		}

		wg := sync.WaitGroup{}
		for i := 0; i < 100; i++ {
			wg.Go(worker)
		}

		objs := []*v1.Pod{}

		// While workers run, randomly create events for the informer
		for i := 0; i < 10000; i++ {
			if len(objs) == 0 {
				// Make sure there is always an object
				obj := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
					Name: "pod" + strconv.Itoa(i),
				}}
				objs = append(objs, obj)

				// deep copy before adding since the Modify function
				// mutates the obj
				source.Add(obj.DeepCopy())
			}

			switch rand.Intn(3) {
			case 0:
				// Add Object
				obj := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
					Name: "pod" + strconv.Itoa(i),
				}}
				objs = append(objs, obj)
				source.Add(obj.DeepCopy())
			case 1:
				// Update Object
				idx := rand.Intn(len(objs))
				source.Modify(objs[idx].DeepCopy())

			case 2:
				// Remove Object
				idx := rand.Intn(len(objs))
				source.Delete(objs[idx].DeepCopy())
				objs = append(objs[:idx], objs[idx+1:]...)
			}
		}

		// stop informer which stops workers. stopping informer first to
		// exercise contention for informer while it is closing
		informerStop()

		// wait for workers to finish since they may throw errors
		wg.Wait()
	})
}
