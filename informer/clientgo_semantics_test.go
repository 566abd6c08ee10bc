package informer

// Tests of client-go's shared informer behaviour (tools/cache at v0.36.3)
// that its own tests leave implicit, on the memory and the bolt store:
// what a resync hands to OnUpdate, the watch error handler on a watch
// disruption, a registration's HasSynced when the initial list is empty,
// and a handler removing itself from its callback. Each states the client-go code it holds this package to.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

// A resync is OnUpdate(obj, obj) with the stored object as both old and
// new (client-go's processDeltas for a Sync delta: the object the indexer
// held, which the Sync delta carries), to handlers whose resync period is
// due only. A bolt store's object is a decoded copy of what was listed,
// but one copy, handed as both arguments.
func TestClientGoResyncUpdatesWithTheStoredObject(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1", Labels: map[string]string{"a": "b"}}})

		clock := testingclock.NewFakeClock(time.Now())
		informer := newInformer(t, source, Options{Store: sk.open(t), ResyncPeriod: time.Second, Clock: clock})
		type update struct{ old, new interface{} }
		var mu sync.Mutex
		var resyncs, quiet []update
		record := func(into *[]update) cache.ResourceEventHandlerFuncs {
			return cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, new interface{}) {
				mu.Lock()
				defer mu.Unlock()
				*into = append(*into, update{old, new})
			}}
		}
		if _, err := informer.AddEventHandlerWithResyncPeriod(record(&resyncs), time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := informer.AddEventHandlerWithResyncPeriod(record(&quiet), 0); err != nil {
			t.Fatal(err)
		}
		witness := newTestListener("witness", 0)
		if _, err := informer.AddEventHandlerWithResyncPeriod(witness, 0); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)
		waitDone(t, "informer", informer.HasSyncedChecker())
		waitTickers(t, informer, clock)
		clock.Step(time.Second)

		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return len(resyncs) > 0, nil
		})
		if err != nil {
			t.Fatal("no resync")
		}
		// The barrier's add follows the resync's updates to every handler.
		(&barrier{source: source}).pass(t, witness)
		mu.Lock()
		defer mu.Unlock()
		if len(resyncs) != 1 {
			t.Fatalf("%d resync updates, want 1 (pod1)", len(resyncs))
		}
		if len(quiet) != 0 {
			t.Fatalf("a handler without a resync period got %d updates", len(quiet))
		}
		old, new := resyncs[0].old.(*v1.Pod), resyncs[0].new.(*v1.Pod)
		if old != new {
			t.Errorf("resync handed two objects (%p, %p), want the stored one as old and new", old, new)
		}
		stored, ok, err := informer.GetStore().GetByKey("pod1")
		if err != nil || !ok {
			t.Fatalf("pod1 not stored: %v", err)
		}
		if new.Name != "pod1" || new.Labels["a"] != "b" || new.ResourceVersion != stored.(*v1.Pod).ResourceVersion {
			t.Errorf("resync of %#v, stored %#v", new, stored)
		}
	})
}

// A watch the server closes (the fake source's ResetWatch) is reported to
// the watch error handler, then so is the 410 of the watch that resumes
// from a resourceVersion the server forgot; the relist follows (client-go's
// Reflector.RunWithContext passes every error ListAndWatch returns to the
// handler).
func TestClientGoWatchErrorHandlerOnDisruption(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})
		informer := newSharedInformer(t, sk, source, 0)
		errs := make(chan error, 100)
		if err := informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			select {
			case errs <- err:
			default:
			}
		}); err != nil {
			t.Fatal(err)
		}
		listener := newTestListener("listener", 0, "pod1")
		if _, err := informer.AddEventHandler(listener); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)
		b := &barrier{source: source}
		b.ok(t, []*testListener{listener})
		// The fake source cannot stream a WatchList: the reflector lists
		// instead, without reporting that (client-go logs it at V(4)).
		if len(errs) > 0 {
			t.Fatalf("watch error handler called before any disruption: %v", <-errs)
		}

		source.AddDropWatch(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2"}})
		source.ResetWatch()
		listener.setExpected("pod1", "pod2")
		b.ok(t, []*testListener{listener})

		var got []error
		expired := false
		for len(errs) > 0 {
			err := <-errs
			got = append(got, err)
			expired = expired || apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
		}
		if len(got) == 0 || !expired {
			t.Fatalf("watch error handler got %v, want the closed watch and the 410 that made the informer relist", got)
		}
	})
}

// A registration's HasSynced becomes true once the informer synced, even
// with nothing listed (client-go's processorListener: the informer's
// HasSynced and no initial add pending), before Run it is false.
func TestClientGoRegistrationSyncedOnEmptyList(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		informer := newSharedInformer(t, sk, source, 0)
		early, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		if early.HasSynced() {
			t.Fatal("registration synced before Run")
		}
		runUntil(t, informer)
		waitDone(t, "registration", early.HasSyncedChecker())
		if !informer.HasSynced() {
			t.Fatal("a registration synced before its informer")
		}
		late, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, "late registration", late.HasSyncedChecker())
	})
}

// A handler may remove itself from its own callback (client-go's
// RemoveEventHandler takes the informer's locks, which no callback
// holds): it is told nothing after the callback that removed it, and the
// informer goes on serving the others.
func TestClientGoHandlerRemovesItself(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})
		informer := newSharedInformer(t, sk, source, 0)
		var (
			mu     sync.Mutex
			told   []string
			handle cache.ResourceEventHandlerRegistration
		)
		removed := make(chan error, 1)
		h, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			mu.Lock()
			told = append(told, obj.(*v1.Pod).Name)
			reg := handle
			mu.Unlock()
			if obj.(*v1.Pod).Name == "pod2" {
				removed <- informer.RemoveEventHandler(reg)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		handle = h
		mu.Unlock()
		witness := newTestListener("witness", 0, "pod1", "pod2", "pod3")
		if _, err := informer.AddEventHandler(witness); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)
		waitDone(t, "handler", h.HasSyncedChecker())
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2"}})
		select {
		case err := <-removed:
			if err != nil {
				t.Fatalf("a handler removing itself: %v", err)
			}
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatal("the handler was not told pod2")
		}
		if isRegistered(informer, h) {
			t.Fatal("still registered after removing itself")
		}
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod3"}})
		(&barrier{source: source}).ok(t, []*testListener{witness})
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"pod1", "pod2"}; !slices.Equal(told, want) {
			t.Fatalf("the removed handler was told %v, want %v", told, want)
		}
	})
}
