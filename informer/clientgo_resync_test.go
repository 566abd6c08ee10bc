package informer

// Ports of client-go's tools/cache/shared_informer_test.go at v0.36.3:
// TestListenerResyncPeriods, TestListenerResyncPeriodsDelayed,
// TestResyncCheckPeriod, TestSharedInformerWatchDisruption and
// TestSharedInformerErrorHandling, run on the memory and the bolt store.
//
// Adapted: client-go runs TestListenerResyncPeriods in a synctest bubble
// and advances time with time.Sleep; here the informer's clock
// (Options.Clock) is a fake one, stepped once its resync ticker waits on
// it. The startup delay of TestListenerResyncPeriodsDelayed is a hook of
// client-go's sharedProcessor; here handlers are added while the informer
// is already running, the situation the hook simulates (distribution
// before the listener runs). TestSharedInformerWatchDisruption steps the
// fake clock for the resync only: the reflector runs on the real clock with
// a millisecond backoff (newInformer), so the sleeps and the clock step
// that expire client-go's backoff are not needed.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

// waitTickers waits until the informer's resync ticker (and the mutation
// detector's, when it is on) wait on clock, so that a step reaches them.
func waitTickers(t *testing.T, inf *Informer, clock *testingclock.FakeClock) {
	t.Helper()
	want := 1
	if inf.detector != nil {
		want++
	}
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return clock.Waiters() >= want, nil
	})
	if err != nil {
		t.Fatalf("%d waiters on the fake clock, want %d", clock.Waiters(), want)
	}
}

func TestClientGoListenerResyncPeriods(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		for _, delayed := range []bool{false, true} {
			name := "now"
			if delayed {
				name = "delayed"
			}
			t.Run(name, func(t *testing.T) { testListenerResyncPeriods(t, sk, delayed) })
		}
	})
}

func testListenerResyncPeriods(t *testing.T, sk cgStore, delayed bool) {
	// source simulates an apiserver object endpoint.
	source := newFakeControllerSource(t)
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2"}})

	// create the shared informer and resync every 1s
	clock := testingclock.NewFakeClock(time.Now())
	informer := newInformer(t, source, Options{Store: sk.open(t), ResyncPeriod: time.Second, Clock: clock})

	// listener 1, never resync
	listener1 := newTestListener("listener1", 0, "pod1", "pod2")
	// listener 2, resync every 2s
	listener2 := newTestListener("listener2", 2*time.Second, "pod1", "pod2")
	// listener 3, resync every 3s
	listener3 := newTestListener("listener3", 3*time.Second, "pod1", "pod2")
	listeners := []*testListener{listener1, listener2, listener3}

	add := func() {
		for _, l := range listeners {
			if _, err := informer.AddEventHandlerWithResyncPeriod(l, l.resyncPeriod); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !delayed {
		add()
	}
	runUntil(t, informer)
	if delayed {
		add()
	}
	waitTickers(t, informer, clock)

	// Ensure all listeners got the initial after the initial processing,
	// at the initial start time.
	b := &barrier{source: source}
	b.ok(t, listeners)

	// reset
	for _, listener := range listeners {
		listener.reset()
	}

	// advance so listener2 gets a resync
	clock.Step(2 * time.Second)

	// make sure listener2 got the resync, and listeners 1 and 3 nothing
	listener1.setExpected()
	listener3.setExpected()
	b.ok(t, listeners)

	// reset
	for _, listener := range listeners {
		listener.reset()
	}

	// advance so listener3 gets a resync
	clock.Step(1 * time.Second)

	// make sure listener3 got the resync, and listeners 1 and 2 nothing
	listener2.setExpected()
	listener3.setExpected("pod1", "pod2")
	b.ok(t, listeners)
}

func TestClientGoResyncCheckPeriod(t *testing.T) {
	// source simulates an apiserver object endpoint.
	source := newFakeControllerSource(t)

	// create the shared informer and resync every 12 hours
	clock := testingclock.NewFakeClock(time.Now())
	informer := newInformer(t, source, Options{Store: newMemStore(t), ResyncPeriod: 12 * time.Hour, Clock: clock})
	gl := func(h cache.ResourceEventHandlerRegistration) *listener { return h.(*listener) }
	period := func(h cache.ResourceEventHandlerRegistration) time.Duration {
		l := gl(h)
		l.resyncMu.Lock()
		defer l.resyncMu.Unlock()
		return l.resyncPeriod
	}
	add := func(name string, resync time.Duration) cache.ResourceEventHandlerRegistration {
		h, err := informer.AddEventHandlerWithResyncPeriod(newTestListener(name, resync), resync)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	expect := func(e, a time.Duration) {
		t.Helper()
		if e != a {
			t.Errorf("expected %d, got %d", e, a)
		}
	}

	// listener 1, never resync
	handler1 := add("listener1", 0)
	expect(12*time.Hour, informer.checkPeriod())
	expect(0, period(handler1))

	// listener 2, resync every minute
	handler2 := add("listener2", time.Minute)
	expect(time.Minute, informer.checkPeriod())
	expect(0, period(handler1))
	expect(time.Minute, period(handler2))

	// listener 3, resync every 55 seconds
	handler3 := add("listener3", 55*time.Second)
	expect(55*time.Second, informer.checkPeriod())
	expect(0, period(handler1))
	expect(time.Minute, period(handler2))
	expect(55*time.Second, period(handler3))

	// listener 4, resync every 5 seconds
	handler4 := add("listener4", 5*time.Second)
	expect(5*time.Second, informer.checkPeriod())
	expect(0, period(handler1))
	expect(time.Minute, period(handler2))
	expect(55*time.Second, period(handler3))
	expect(5*time.Second, period(handler4))
}

// TestClientGoSharedInformerWatchDisruption simulates a watch that was
// closed with updates to the store during that time. We ensure that
// handlers with resync and no resync see the expected state.
func TestClientGoSharedInformerWatchDisruption(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		// source simulates an apiserver object endpoint.
		source := newFakeControllerSource(t)

		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1", UID: "pod1", ResourceVersion: "1"}})
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2", UID: "pod2", ResourceVersion: "2"}})

		// create the shared informer and resync every 1s
		clock := testingclock.NewFakeClock(time.Now())
		informer := newInformer(t, source, Options{Store: sk.open(t), ResyncPeriod: time.Second, Clock: clock})

		// listener, never resync
		listenerNoResync := newTestListener("listenerNoResync", 0, "pod1", "pod2")
		if _, err := informer.AddEventHandlerWithResyncPeriod(listenerNoResync, listenerNoResync.resyncPeriod); err != nil {
			t.Fatal(err)
		}

		listenerResync := newTestListener("listenerResync", 1*time.Second, "pod1", "pod2")
		if _, err := informer.AddEventHandlerWithResyncPeriod(listenerResync, listenerResync.resyncPeriod); err != nil {
			t.Fatal(err)
		}
		listeners := []*testListener{listenerNoResync, listenerResync}

		runUntil(t, informer)
		waitTickers(t, informer, clock)
		b := &barrier{source: source}
		b.ok(t, listeners)

		// Add pod3, bump pod2 but don't broadcast it, so that the change
		// will be seen only on relist
		source.AddDropWatch(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod3", UID: "pod3", ResourceVersion: "3"}})
		source.ModifyDropWatch(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2", UID: "pod2", ResourceVersion: "4"}})

		// Ensure that nobody saw any changes. No barrier here: its
		// watch event would carry the reflector past the dropped
		// changes, and the reset below would not make it relist. Nothing
		// was sent, and the fake clock holds the resyncs back, so there
		// is nothing to wait for.
		for _, l := range listeners {
			if !l.satisfiedExpectations() {
				t.Errorf("%s: expected %v, got %v", l.name, sets.List(l.expectedItemNames), l.received())
			}
		}

		for _, listener := range listeners {
			listener.reset()
		}

		listenerNoResync.setExpected("pod2", "pod3")
		listenerResync.setExpected("pod1", "pod2", "pod3")

		// This calls shouldSync, which deletes noResync from the list of
		// syncingListeners
		clock.Step(1 * time.Second)

		// Simulate a connection loss (or even just a too-old-watch)
		source.ResetWatch()

		b.ok(t, listeners)
	})
}

func TestClientGoSharedInformerErrorHandling(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})
		source.ListError = errors.New("Access Denied")

		informer := newSharedInformer(t, sk, source, time.Second)

		// Adapted: the handler never blocks. client-go's blocks on an
		// unbuffered channel after its first error, harmless with its
		// 800ms backoff; the millisecond backoff here calls it again at
		// once, and a blocked handler would hold the reflector at stop.
		errCh := make(chan error, 1)
		if err := informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			select {
			case errCh <- err:
			default:
			}
		}); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)

		select {
		case err := <-errCh:
			if !strings.Contains(err.Error(), "Access Denied") {
				t.Errorf("Expected 'Access Denied' error. Actual: %v", err)
			}
		case <-time.After(wait.ForeverTestTimeout):
			t.Errorf("Timeout waiting for error handler call")
		}
	})
}
