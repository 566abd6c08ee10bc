package informer

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
)

// objEvent is a notification with its objects.
type objEvent struct {
	kind     string // add, update, delete
	old, new interface{}
}

// objRecorder records notifications with their objects.
type objRecorder struct {
	mu     sync.Mutex
	events []objEvent
}

func (r *objRecorder) handler() cache.ResourceEventHandlerFuncs {
	rec := func(e objEvent) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, e)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { rec(objEvent{kind: "add", new: obj}) },
		UpdateFunc: func(old, new interface{}) { rec(objEvent{kind: "update", old: old, new: new}) },
		DeleteFunc: func(obj interface{}) { rec(objEvent{kind: "delete", old: obj}) },
	}
}

func (r *objRecorder) snapshot() []objEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]objEvent(nil), r.events...)
}

// labelled is testkit.Pod(name, rv) with a label, so that objects carry more than
// their key and resourceVersion.
func labelled(name, rv, v string) *corev1.Pod {
	p := testkit.Pod(name, rv)
	p.Labels = map[string]string{"v": v}
	return p
}

// testStores returns a constructor of each store the informer runs on.
func testStores() map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"memory": newMemStore,
		"bolt": func(t *testing.T) store.Store {
			s, closeStore := openBolt(t, filepath.Join(t.TempDir(), "r.db"), nil, nil)
			t.Cleanup(closeStore)
			return s
		},
	}
}

// TestRelistChangesWithObjects checks the objects a relist's changes carry,
// streamed from the store after its commit: the added object, the old
// object of an update (the replaced one, whole) and its new one, and a
// vanished object's last state in a DeletedFinalStateUnknown; unchanged
// objects notify nothing, and a second relist still sees the first one's
// content.
func TestRelistChangesWithObjects(t *testing.T) {
	for name, newStore := range testStores() {
		t.Run(name, func(t *testing.T) {
			inf := newTestInformer(t, Options{Store: newStore(t)})
			rec := &objRecorder{}
			if _, err := inf.AddEventHandler(rec.handler()); err != nil {
				t.Fatal(err)
			}
			h := startHarness(t, inf)
			a, b, c, e := labelled("a", "1", "a1"), labelled("b", "2", "b-old"), labelled("c", "3", "c-last"), labelled("e", "4", "e")
			h.relist("10", a, b, c, e)
			b2, d := labelled("b", "15", "b-new"), labelled("d", "16", "d")
			h.relist("20", labelled("a", "1", "a1"), b2, d, labelled("e", "4", "e"))
			h.waitBatch(func(bt deltafifo.Batch) bool {
				return bt.Kind == deltafifo.KindReplaceEnd && bt.ResourceVersion == "20"
			})
			// A third relist diffs against the second's content: the
			// retained content of the second was released, not kept.
			d3 := labelled("d", "21", "d3")
			h.relist("30", labelled("a", "1", "a1"), b2, d3)
			h.waitBatch(func(bt deltafifo.Batch) bool {
				return bt.Kind == deltafifo.KindReplaceEnd && bt.ResourceVersion == "30"
			})

			got := rec.snapshot()
			want := []objEvent{
				{kind: "add", new: a}, {kind: "add", new: b}, {kind: "add", new: c}, {kind: "add", new: e},
				{kind: "update", old: b, new: b2},
				{kind: "delete", old: cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: c}},
				{kind: "add", new: d},
				{kind: "update", old: d, new: d3},
				{kind: "delete", old: cache.DeletedFinalStateUnknown{Key: "ns/e", Obj: e}},
			}
			if len(got) != len(want) {
				t.Fatalf("%d notifications, want %d: %s", len(got), len(want), describeEvents(got))
			}
			for i := range want {
				if got[i].kind != want[i].kind || !apiequality.Semantic.DeepEqual(got[i].old, want[i].old) || !apiequality.Semantic.DeepEqual(got[i].new, want[i].new) {
					t.Errorf("notification %d = %s, want %s", i, describeEvents(got[i:i+1]), describeEvents(want[i:i+1]))
				}
			}
		})
	}
}

func describeEvents(es []objEvent) string {
	s := ""
	for _, e := range es {
		s += fmt.Sprintf("[%s %s -> %s] ", e.kind, describeObj(e.old), describeObj(e.new))
	}
	return s
}

// readCounter counts a store's point reads by path.
type readCounter struct {
	store.Store
	mu               sync.Mutex
	cached, uncached int
}

func (c *readCounter) GetByKey(key string) (interface{}, bool, error) {
	c.mu.Lock()
	c.cached++
	c.mu.Unlock()
	return c.Store.GetByKey(key)
}

func (c *readCounter) GetByKeyUncached(key string) (interface{}, bool, error) {
	c.mu.Lock()
	c.uncached++
	c.mu.Unlock()
	return store.GetUncached(c.Store, key)
}

// ReadStates is the store's own when it has one (bolt: the batch read the
// informer uses), else reads key by key as the informer does; each object
// it returns counts as an uncached read.
func (c *readCounter) ReadStates(keys []string, want func(i int, rv string) bool) ([]store.StoredState, error) {
	states, err := readStates(c.Store, keys, func(i int, rv string) (bool, interface{}) { return want(i, rv), nil })
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range states {
		if st.Obj != nil {
			c.uncached++
		}
	}
	return states, nil
}

func (c *readCounter) counts() (cached, uncached int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cached, c.uncached
}

// TestWriterReadsUncached checks what the processing loop reads: a resync
// (Sync deltas carry keys only) reads each object once, past the store's
// decoded object cache, and notifies OnUpdate with the same object twice;
// an update reads its old object the same way; a delete and a replayed
// event not newer than the stored one read no object at all.
func TestWriterReadsUncached(t *testing.T) {
	for name, newStore := range testStores() {
		t.Run(name, func(t *testing.T) {
			st := &readCounter{Store: newStore(t)}
			inf := newTestInformer(t, Options{Store: st})
			rec := &objRecorder{}
			if _, err := inf.AddEventHandler(rec.handler()); err != nil {
				t.Fatal(err)
			}
			h := startHarness(t, inf)
			h.relist("10", labelled("a", "1", "a"), labelled("b", "2", "b"), labelled("c", "3", "c"))
			h.waitBatch(func(bt deltafifo.Batch) bool { return bt.Kind == deltafifo.KindReplaceEnd })
			base := len(rec.snapshot())
			c0, u0 := st.counts()

			h.must(h.q.Resync(h.ctx))
			h.waitIdle("11")
			syncs := rec.snapshot()[base:]
			if len(syncs) != 3 {
				t.Fatalf("resync notified %s, want 3 updates", describeEvents(syncs))
			}
			for _, e := range syncs {
				if e.kind != "update" || e.old != e.new || e.new == nil {
					t.Errorf("resync notified %s, want OnUpdate with the same stored object twice", describeEvents([]objEvent{e}))
				}
			}
			if c, u := st.counts(); c != c0 || u != u0+3 {
				t.Errorf("resync of 3 objects: %d cached and %d uncached reads, want 0 and 3", c-c0, u-u0)
			}

			c0, u0 = st.counts()
			h.must(h.q.Update(h.ctx, labelled("a", "12", "a2")))
			h.must(h.q.Update(h.ctx, labelled("b", "2", "b"))) // a replay: not newer
			h.must(h.q.Delete(h.ctx, labelled("c", "13", "c")))
			h.waitIdle("13")
			if c, u := st.counts(); c != c0 || u != u0+1 {
				t.Errorf("an update, a replay and a delete: %d cached and %d uncached reads, want 0 and 1 (the update's old object)", c-c0, u-u0)
			}
			got := rec.snapshot()[base+3:]
			if len(got) != 2 || got[0].kind != "update" || !apiequality.Semantic.DeepEqual(got[0].old, labelled("a", "1", "a")) || got[1].kind != "delete" {
				t.Errorf("notified %s, want the update of a (old object a@1) and the delete of c", describeEvents(got))
			}
		})
	}
}
