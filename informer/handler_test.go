package informer

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestColdStartInitialListAndLiveEvents(t *testing.T) {
	inf := newTestInformer(t, Options{})
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	if inf.HasSynced() || reg.HasSynced() {
		t.Fatal("synced before the initial list")
	}
	h.relist("10", testkit.Pod("a", "5"), testkit.Pod("b", "7"))
	h.must(h.q.Add(h.ctx, testkit.Pod("c", "11")))
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "12")))
	h.must(h.q.Delete(h.ctx, testkit.Pod("b", "13")))
	h.waitIdle("14")
	equalEvents(t, rec.Snapshot(), []event{
		"add ns/a@5 initial=true",
		"add ns/b@7 initial=true",
		"add ns/c@11 initial=false",
		"update ns/a@5 -> ns/a@12",
		"delete ns/b@13",
	})
	if !inf.HasSynced() || !reg.HasSynced() || !cache.IsDone(reg.HasSyncedChecker()) {
		t.Fatal("not synced after the initial list was delivered")
	}
	keys := sortedKeys(inf.GetStore())
	if fmt.Sprint(keys) != "[ns/a ns/c]" {
		t.Fatalf("store keys %v", keys)
	}
	if rv := inf.GetStore().(cache.Indexer).LastStoreSyncResourceVersion(); rv != "14" {
		t.Fatalf("store RV %q, want 14", rv)
	}
}

func TestRegistrationSyncedWaitsForDelivery(t *testing.T) {
	inf := newTestInformer(t, Options{})
	rec := newRecorder()
	rec.Block = make(chan struct{})
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("3", testkit.Pod("a", "1"), testkit.Pod("b", "2"))
	<-inf.HasSyncedChecker().Done()
	if reg.HasSynced() {
		t.Fatal("registration synced while its initial adds are undelivered")
	}
	rec.Block <- struct{}{}
	rec.WaitFor(t, 1)
	if reg.HasSynced() {
		t.Fatal("registration synced with one initial add undelivered")
	}
	rec.Block <- struct{}{}
	<-reg.HasSyncedChecker().Done()
}

func TestOrderingPerObject(t *testing.T) {
	inf := newTestInformer(t, Options{BatchSize: 3})
	recs := []*recorder{newRecorder(), newRecorder()}
	for _, r := range recs {
		if _, err := inf.AddEventHandler(r); err != nil {
			t.Fatal(err)
		}
	}
	h := startHarness(t, inf)
	h.relist("1")
	rv := 1

	for round := 0; round < 20; round++ {
		for _, name := range []string{"a", "b", "c", "d"} {
			rv++
			p := testkit.Pod(name, fmt.Sprint(rv))
			if round == 0 {
				h.must(h.q.Add(h.ctx, p))
			} else {
				h.must(h.q.Update(h.ctx, p))
			}
		}
	}
	h.waitIdle("1000")
	for _, r := range recs {
		got := r.Snapshot()
		if len(got) != 80 {
			t.Fatalf("got %d events, want 80", len(got))
		}
		last := map[string]string{}
		for _, e := range got {
			var key, old, new string
			if _, err := fmt.Sscanf(string(e), "update %s -> %s", &old, &new); err == nil {
				key = new[:4]
				if last[key] != old {
					t.Fatalf("update %q does not follow %q", e, last[key])
				}
				last[key] = new
				continue
			}
			if _, err := fmt.Sscanf(string(e), "add %s initial=false", &new); err != nil {
				t.Fatalf("unexpected event %q", e)
			}
			last[new[:4]] = new
		}
	}

}

func TestStaleAndUnknownEventsSkipped(t *testing.T) {
	inf := newTestInformer(t, Options{})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "5"), testkit.Pod("b", "9"))
	rec.WaitFor(t, 2)
	// Replays of events the store holds (as after a crash resume), and a
	// delete for a key it does not hold, produce nothing.
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "4")))
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "5")))
	h.must(h.q.Delete(h.ctx, testkit.Pod("b", "8")))
	h.must(h.q.Delete(h.ctx, testkit.Pod("zz", "11")))
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "12")))
	h.waitIdle("13")
	equalEvents(t, rec.Snapshot(), []event{
		"add ns/a@5 initial=true",
		"add ns/b@9 initial=true",
		"update ns/a@5 -> ns/a@12",
	})
	if _, ok, _ := inf.GetStore().GetByKey("ns/b"); !ok {
		t.Fatal("a stale delete removed ns/b")
	}
}

func TestDeletedFinalStateUnknownDelete(t *testing.T) {
	inf := newTestInformer(t, Options{})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "5"))
	h.must(h.q.Delete(h.ctx, cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: testkit.Pod("a", "5")}))
	h.waitIdle("11")
	equalEvents(t, rec.Snapshot(), []event{
		"add ns/a@5 initial=true",
		"delete dfsu(ns/a@5)",
	})
	if len(inf.GetStore().ListKeys()) != 0 {
		t.Fatal("tombstone did not delete")
	}
}

func TestRelistNotifiesOnlyChanges(t *testing.T) {
	inf := newTestInformer(t, Options{})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3"))
	h.relist("20", testkit.Pod("a", "1"), testkit.Pod("b", "15"), testkit.Pod("d", "16"))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd && b.ResourceVersion == "20" })
	equalEvents(t, rec.Snapshot(), []event{
		"add ns/a@1 initial=true",
		"add ns/b@2 initial=true",
		"add ns/c@3 initial=true",
		// The relist's changes, in key order.
		"update ns/b@2 -> ns/b@15",
		"delete dfsu(ns/c@3)",
		"add ns/d@16 initial=false",
	})
	if got := fmt.Sprint(sortedKeys(inf.GetStore())); got != "[ns/a ns/b ns/d]" {
		t.Fatalf("store keys %s", got)
	}
}

func TestRelistAbortKeepsContent(t *testing.T) {
	inf := newTestInformer(t, Options{})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"))
	h.must(h.q.BeginReplace(h.ctx))
	h.must(h.q.ReplacePage(h.ctx, []interface{}{testkit.Pod("b", "2")}))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplacePage })
	h.must(h.q.AbortReplace())
	h.waitIdle("11")
	equalEvents(t, rec.Snapshot(), []event{"add ns/a@1 initial=true"})
	if got := fmt.Sprint(sortedKeys(inf.GetStore())); got != "[ns/a]" {
		t.Fatalf("store keys %s", got)
	}
}

func TestHandlerAddedLateGetsCurrentState(t *testing.T) {
	inf := newTestInformer(t, Options{})
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd })
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "11")))
	h.waitIdle("12")
	<-reg.HasSyncedChecker().Done()
	equalEvents(t, rec.Snapshot(), []event{
		"add ns/a@1 initial=true",
		"add ns/b@2 initial=true",
		"update ns/a@1 -> ns/a@11",
	})
}

func TestHandlerAddedFromHandler(t *testing.T) {
	inf := newTestInformer(t, Options{})
	inner := newRecorder()
	added := make(chan cache.ResourceEventHandlerRegistration, 1)
	outer := cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(obj interface{}, _ bool) {
		if describeObj(obj) == "ns/b@2" {
			reg, err := inf.AddEventHandler(inner)
			if err != nil {
				t.Error(err)
			}
			added <- reg
		}
	}}
	if _, err := inf.AddEventHandler(outer); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3"))
	reg := <-added
	<-reg.HasSyncedChecker().Done()
	equalEvents(t, inner.Snapshot(), []event{
		"add ns/a@1 initial=true",
		"add ns/b@2 initial=true",
		"add ns/c@3 initial=true",
	})
}

func TestRemoveEventHandler(t *testing.T) {
	inf := newTestInformer(t, Options{})
	kept, removed := newRecorder(), newRecorder()
	if _, err := inf.AddEventHandler(kept); err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(removed)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"))
	removed.WaitFor(t, 1)
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Fatalf("second removal: %v", err)
	}
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "11")))
	h.waitIdle("12")
	if got := len(removed.Snapshot()); got != 1 {
		t.Fatalf("removed handler got %d events, want 1", got)
	}
	if got := len(kept.Snapshot()); got != 2 {
		t.Fatalf("kept handler got %d events, want 2", got)
	}
	if err := inf.RemoveEventHandler(struct {
		cache.ResourceEventHandlerRegistration
	}{}); !errors.Is(err, ErrInvalidRegistration) {
		t.Fatalf("foreign handle: %v", err)
	}
}

func TestStartedAndStoppedErrors(t *testing.T) {
	inf := newTestInformer(t, Options{})
	h := startHarness(t, inf)
	if err := inf.SetTransform(nil); !errors.Is(err, ErrStarted) {
		t.Fatalf("SetTransform after start: %v", err)
	}
	if err := inf.SetWatchErrorHandler(nil); !errors.Is(err, ErrStarted) {
		t.Fatalf("SetWatchErrorHandler after start: %v", err)
	}
	h.stop()
	if !inf.IsStopped() {
		t.Fatal("not stopped")
	}
	if _, err := inf.AddEventHandler(newRecorder()); !errors.Is(err, ErrStopped) {
		t.Fatalf("AddEventHandler after stop: %v", err)
	}
	if err := inf.AddIndexers(cache.Indexers{"x": cache.MetaNamespaceIndexFunc}); !errors.Is(err, ErrStopped) {
		t.Fatalf("AddIndexers after stop: %v", err)
	}
}

func sortedKeys(s cache.Store) []string {
	keys := s.ListKeys()
	sort.Strings(keys)
	return keys
}

// TestIncompleteStoreRelistNotifiesEverything: a store holding objects but
// not complete (an interrupted relist, data marked incomplete) is not
// replayed, so the relist must tell the handlers about every object, even
// those whose resourceVersion did not change.
func TestIncompleteStoreRelistNotifiesEverything(t *testing.T) {
	st := newMemStore(t)
	if err := st.Add(testkit.Pod("a", "5")); err != nil {
		t.Fatal(err)
	}
	if s, err := st.State(); err != nil || s.Complete || s.Objects != 1 {
		t.Fatalf("setup: state %+v, %v", s, err)
	}
	inf := newTestInformer(t, Options{Store: st})
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "5"), testkit.Pod("b", "7"))
	<-reg.HasSyncedChecker().Done()
	equalEvents(t, sortedEvents(rec.Snapshot()), []event{
		"add ns/a@5 initial=true",
		"add ns/b@7 initial=true",
	})
}
