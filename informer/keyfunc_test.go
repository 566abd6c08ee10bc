package informer

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/memory"
)

// nameFirstKey keys objects "name.namespace", unlike the default
// "namespace/name"; a tombstone keeps its own key.
func nameFirstKey(obj interface{}) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("name-first key: %w", err)
	}
	return m.GetName() + "." + m.GetNamespace(), nil
}

// A store with its own key function works end to end: the queue and the
// relist diff key objects as the store does, so updates, deletes and a
// relist's changes and vanished objects are all recognised.
func TestStoreWithCustomKeyFunc(t *testing.T) {
	st, err := memory.New(memory.Options{KeyFunc: nameFirstKey})
	if err != nil {
		t.Fatal(err)
	}
	inf := newTestInformer(t, Options{Store: st})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3"))
	h.must(h.q.Add(h.ctx, testkit.Pod("d", "11")))
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "12")))
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "4"))) // stale: older than the stored 12
	h.must(h.q.Delete(h.ctx, testkit.Pod("b", "13")))
	h.waitIdle("14")
	equalEvents(t, rec.Snapshot(), []event{
		"add ns/a@1 initial=true",
		"add ns/b@2 initial=true",
		"add ns/c@3 initial=true",
		"add ns/d@11 initial=false",
		"update ns/a@1 -> ns/a@12",
		"delete ns/b@13",
	})
	if got := fmt.Sprint(sortedKeys(st)); got != "[a.ns c.ns d.ns]" {
		t.Fatalf("store keys after the watch events %s", got)
	}

	// A relist: a unchanged, c updated, d vanished, e new.
	h.relist("20", testkit.Pod("a", "12"), testkit.Pod("c", "15"), testkit.Pod("e", "16"))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd && b.ResourceVersion == "20" })
	equalEvents(t, sortedEvents(rec.Snapshot()[6:]), []event{
		"add ns/e@16 initial=false",
		"delete dfsu(d.ns@11)", // the tombstone carries the store's key
		"update ns/c@3 -> ns/c@15",
	})
	if got := fmt.Sprint(sortedKeys(st)); got != "[a.ns c.ns e.ns]" {
		t.Fatalf("store keys after the relist %s", got)
	}
	// A tombstone keyed as the store keys deletes.
	h.must(h.q.Delete(h.ctx, cache.DeletedFinalStateUnknown{Key: "e.ns", Obj: testkit.Pod("e", "16")}))
	h.waitIdle("21")
	equalEvents(t, rec.Snapshot()[9:], []event{"delete dfsu(e.ns@16)"})
	if got := fmt.Sprint(sortedKeys(st)); got != "[a.ns c.ns]" {
		t.Fatalf("store keys after a tombstone delete %s", got)
	}
}
