package informer

// Ports of client-go's tools/cache/shared_informer_test.go at v0.36.3:
// TestSharedInformerRemoveHandler, TestSharedInformerRemoveForeignHandler,
// TestSharedInformerMultipleRegistration, TestRemovingRemovedSharedInformer,
// TestRemoveWhileActive and TestAddWhileActive. The registration tests do
// not depend on the store and run on the memory store only; the others run
// on both stores.
//
// Adapted: eventHandlerCount and isRegistered read this package's
// processor instead of client-go's; testListener.ok's one-second wait for
// stragglers is a barrier pod (see clientgo_helpers_test.go), and where
// the listener under test was removed, a second listener witnesses it.

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestClientGoSharedInformerRemoveHandler(t *testing.T) {
	source := newFakeControllerSource(t)
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

	informer := newSharedInformer(t, cgStores[0], source, time.Second)

	handler1 := &cache.ResourceEventHandlerFuncs{}
	handle1, err := informer.AddEventHandler(handler1)
	if err != nil {
		t.Fatalf("informer did not add handler1: %s", err)
	}
	handler2 := &cache.ResourceEventHandlerFuncs{}
	handle2, err := informer.AddEventHandler(handler2)
	if err != nil {
		t.Fatalf("informer did not add handler2: %s", err)
	}

	if eventHandlerCount(informer) != 2 {
		t.Errorf("informer has %d registered handler, instead of 2", eventHandlerCount(informer))
	}

	if err := informer.RemoveEventHandler(handle2); err != nil {
		t.Errorf("removing of second pointer handler failed: %s", err)
	}
	if eventHandlerCount(informer) != 1 {
		t.Errorf("after removing handler informer has %d registered handler(s), instead of 1", eventHandlerCount(informer))
	}

	if err := informer.RemoveEventHandler(handle1); err != nil {
		t.Errorf("removing of first pointer handler failed: %s", err)
	}
	if eventHandlerCount(informer) != 0 {
		t.Errorf("informer still has registered handlers after removing both handlers")
	}
}

func TestClientGoSharedInformerRemoveForeignHandler(t *testing.T) {
	source := newFakeControllerSource(t)
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

	informer := newSharedInformer(t, cgStores[0], source, time.Second)

	source2 := newFakeControllerSource(t)
	source2.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

	informer2 := newSharedInformer(t, cgStores[0], source2, time.Second)

	handler1 := &cache.ResourceEventHandlerFuncs{}
	handle1, err := informer.AddEventHandler(handler1)
	if err != nil {
		t.Fatalf("informer did not add handler1: %s", err)
	}
	handler2 := &cache.ResourceEventHandlerFuncs{}
	handle2, err := informer.AddEventHandler(handler2)
	if err != nil {
		t.Fatalf("informer did not add handler2: %s", err)
	}

	counts := func(want1, want2 int) {
		t.Helper()
		if n := eventHandlerCount(informer); n != want1 {
			t.Errorf("informer has %d registered handler(s), instead of %d", n, want1)
		}
		if n := eventHandlerCount(informer2); n != want2 {
			t.Errorf("informer2 has %d registered handler(s), instead of %d", n, want2)
		}
	}
	counts(2, 0)

	// remove handle at foreign informer
	if isRegistered(informer2, handle1) {
		t.Errorf("handle1 registered for informer2")
	}
	if isRegistered(informer2, handle2) {
		t.Errorf("handle2 registered for informer2")
	}
	if err := informer2.RemoveEventHandler(handle1); err != nil {
		t.Errorf("removing of second pointer handler failed: %s", err)
	}
	counts(2, 0)
	if !isRegistered(informer, handle1) {
		t.Errorf("handle1 not registered anymore for informer")
	}
	if !isRegistered(informer, handle2) {
		t.Errorf("handle2 not registered anymore for informer")
	}

	if err := informer.RemoveEventHandler(handle2); err != nil {
		t.Errorf("removing of second pointer handler failed: %s", err)
	}
	counts(1, 0)

	if err := informer.RemoveEventHandler(handle1); err != nil {
		t.Errorf("removing of first pointer handler failed: %s", err)
	}
	counts(0, 0)
}

// TestClientGoRemoveForeignHandlerKeepsItWorking goes past client-go's
// test: a handle removed from another informer, running, still receives
// its own informer's notifications.
func TestClientGoRemoveForeignHandlerKeepsItWorking(t *testing.T) {
	source := newFakeControllerSource(t)
	informer := newSharedInformer(t, cgStores[0], source, 0)
	informer2 := newSharedInformer(t, cgStores[0], newFakeControllerSource(t), 0)
	listener := newTestListener("listener", 0, "pod1")
	handle, err := informer.AddEventHandler(listener)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, informer)
	runUntil(t, informer2)
	if err := informer2.RemoveEventHandler(handle); err != nil {
		t.Fatalf("removing a foreign handle: %v", err)
	}
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})
	b := &barrier{source: source}
	b.ok(t, []*testListener{listener})
}

func TestClientGoSharedInformerMultipleRegistration(t *testing.T) {
	source := newFakeControllerSource(t)
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

	informer := newSharedInformer(t, cgStores[0], source, time.Second)

	handler1 := &cache.ResourceEventHandlerFuncs{}
	reg1, err := informer.AddEventHandler(handler1)
	if err != nil {
		t.Fatalf("informer did not add handler for the first time: %s", err)
	}
	if !isRegistered(informer, reg1) {
		t.Fatalf("handle1 is not active after successful registration")
	}

	reg2, err := informer.AddEventHandler(handler1)
	if err != nil {
		t.Fatalf("informer did not add handler for the second: %s", err)
	}
	if !isRegistered(informer, reg2) {
		t.Fatalf("handle2 is not active after successful registration")
	}

	if eventHandlerCount(informer) != 2 {
		t.Errorf("informer has %d registered handler(s), instead of 2", eventHandlerCount(informer))
	}

	if err := informer.RemoveEventHandler(reg1); err != nil {
		t.Errorf("removing of duplicate handler registration failed: %s", err)
	}
	if isRegistered(informer, reg1) {
		t.Fatalf("handle1 is still active after successful remove")
	}
	if !isRegistered(informer, reg2) {
		t.Fatalf("handle2 is not active after removing handle1")
	}
	if n := eventHandlerCount(informer); n != 1 {
		t.Errorf("informer has %d handlers after removal of a duplicate handler registration, want 1", n)
	}

	if err := informer.RemoveEventHandler(reg2); err != nil {
		t.Errorf("removing of second handler registration failed: %s", err)
	}
	if isRegistered(informer, reg2) {
		t.Fatalf("handle2 is still active after successful remove")
	}
	if n := eventHandlerCount(informer); n != 0 {
		t.Errorf("informer has unexpected number (%d) of handlers after removal of second handler registrations", n)
	}
}

func TestClientGoRemovingRemovedSharedInformer(t *testing.T) {
	source := newFakeControllerSource(t)
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

	informer := newSharedInformer(t, cgStores[0], source, time.Second)
	handler := &cache.ResourceEventHandlerFuncs{}
	reg, err := informer.AddEventHandler(handler)
	if err != nil {
		t.Fatalf("informer did not add handler for the first time: %s", err)
	}
	if err := informer.RemoveEventHandler(reg); err != nil {
		t.Fatalf("removing of handler registration failed: %s", err)
	}
	if isRegistered(informer, reg) {
		t.Fatalf("handle is still active after successful remove")
	}
	if err := informer.RemoveEventHandler(reg); err != nil {
		t.Errorf("removing of already removed registration yields unexpected error: %s", err)
	}
	if isRegistered(informer, reg) {
		t.Fatalf("handle is still active after second remove")
	}
}

func TestClientGoRemoveWhileActive(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		// source simulates an apiserver object endpoint.
		source := newFakeControllerSource(t)

		informer := newSharedInformer(t, sk, source, 0)

		listener := newTestListener("listener", 0, "pod1")
		handle, err := informer.AddEventHandler(listener)
		if err != nil {
			t.Fatal(err)
		}
		// Adapted: a witness stays registered to pass the barriers.
		witness := newTestListener("witness", 0, "pod1")
		if _, err := informer.AddEventHandler(witness); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)

		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

		b := &barrier{source: source}
		if !b.ok(t, []*testListener{listener}) {
			t.Fatalf("event did not occur")
		}

		if err := informer.RemoveEventHandler(handle); err != nil {
			t.Fatal(err)
		}
		if isRegistered(informer, handle) {
			t.Fatalf("handle is still active after successful remove")
		}

		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2"}})

		witness.setExpected("pod1", "pod2")
		if !b.ok(t, []*testListener{listener, witness}, witness) {
			t.Fatalf("unexpected event occurred")
		}
	})
}

func TestClientGoAddWhileActive(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		// source simulates an apiserver object endpoint.
		source := newFakeControllerSource(t)

		informer := newSharedInformer(t, sk, source, 0)
		listener1 := newTestListener("originalListener", 0, "pod1")
		listener2 := newTestListener("listener2", 0, "pod1", "pod2")
		handle1, err := informer.AddEventHandler(listener1)
		if err != nil {
			t.Fatal(err)
		}

		if handle1.HasSynced() {
			t.Error("Synced before Run??")
		}

		runUntil(t, informer)

		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})

		b := &barrier{source: source}
		if !b.ok(t, []*testListener{listener1}) {
			t.Fatalf("events on listener1 did not occur")
		}

		select {
		case <-handle1.HasSyncedChecker().Done():
			if !handle1.HasSynced() {
				t.Error("Not synced after channel said we are synced??")
			}
		case <-time.After(10 * time.Second):
			t.Error("Not synced 10 seconds after Run??")
		}

		listener2.lock.Lock() // ensure we observe it before it has synced
		handle2, err := informer.AddEventHandler(listener2)
		if err != nil {
			listener2.lock.Unlock()
			t.Fatal(err)
		}
		if handle2.HasSynced() {
			t.Error("Synced before processing anything?")
		}
		listener2.lock.Unlock() // permit it to proceed and sync

		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2"}})

		if !b.ok(t, []*testListener{listener2}) {
			t.Fatalf("event on listener2 did not occur")
		}

		if !handle2.HasSynced() {
			t.Error("Not synced even after processing?")
		}

		if !isRegistered(informer, handle1) {
			t.Fatalf("handle1 is not active")
		}
		if !isRegistered(informer, handle2) {
			t.Fatalf("handle2 is not active")
		}

		listener1.setExpected("pod1", "pod2")
		if !b.ok(t, []*testListener{listener1}) {
			t.Fatalf("events on listener1 did not occur")
		}
	})
}
