package informer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/handlertest"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
)

// scanCounter counts the full scans of a store.Filler: a fill notifies
// each page's objects and reads nothing back. It hides the store's
// ParallelScanner, so that every scan of the informer goes through Scan.
type scanCounter struct {
	store.Store
	scans atomic.Int32
}

func (c *scanCounter) Scan(ctx context.Context, fn store.ScanFunc) error {
	c.scans.Add(1)
	return c.Store.Scan(ctx, fn)
}

func (c *scanCounter) BeginFill(ctx context.Context) (store.Fill, error) {
	return c.Store.(store.Filler).BeginFill(ctx)
}

// listerCheck is a handler that looks every added object up in the
// informer's store, as a controller's lister would from its handler, and
// records the keys it could not find.
type listerCheck struct {
	st     cache.KeyGetter
	mu     sync.Mutex
	misses []string
}

func (c *listerCheck) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		if _, ok, err := c.st.GetByKey(key); !ok || err != nil {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.misses = append(c.misses, key)
		}
	}}
}

// pushPage pushes a page of the open relist and waits until the loop has
// handled it and every listener delivered it.
func (h *harness) pushPage(objs ...interface{}) {
	h.t.Helper()
	h.mu.Lock()
	pages := 0
	for _, b := range h.handled {
		if b.Kind == deltafifo.KindReplacePage {
			pages++
		}
	}
	h.mu.Unlock()
	h.must(h.q.ReplacePage(h.ctx, objs))
	h.waitBatch(func(deltafifo.Batch) bool {
		n := 0
		for _, b := range h.handled {
			if b.Kind == deltafifo.KindReplacePage {
				n++
			}
		}
		return n > pages
	})
}

// endRelist ends the open relist at rv and waits until it is handled.
func (h *harness) endRelist(rv string) {
	h.t.Helper()
	h.must(h.q.EndReplace(h.ctx, rv))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd && b.ResourceVersion == rv })
}

func adds(objs ...interface{}) []event {
	var out []event
	for _, o := range objs {
		out = append(out, event(fmt.Sprintf("add %s initial=true", describeObj(o))))
	}
	return out
}

// TestColdStartFillsPageByPage: the initial list into an empty store is
// written page by page; each page is in the store (listers see the
// growing cache, incomplete and without a resourceVersion) before the
// handlers are told its objects as initial adds, in page order, and
// nothing is scanned back after the commit.
func TestColdStartFillsPageByPage(t *testing.T) {
	for name, newStore := range testStores() {
		t.Run(name, func(t *testing.T) {
			st := &scanCounter{Store: newStore(t)}
			inf := newTestInformer(t, Options{Store: st})
			rec := newRecorder()
			look := &listerCheck{st: st}
			for _, hd := range []cache.ResourceEventHandler{rec, look.handler()} {
				if _, err := inf.AddEventHandler(hd); err != nil {
					t.Fatal(err)
				}
			}
			h := startHarness(t, inf)
			page1 := []interface{}{testkit.Pod("c", "3"), testkit.Pod("a", "1"), testkit.Pod("b", "2")}
			page2 := []interface{}{testkit.Pod("e", "5"), testkit.Pod("d", "4")}
			h.must(h.q.BeginReplace(h.ctx))
			h.pushPage(page1...)
			if _, ok, err := st.GetByKey("ns/a"); !ok || err != nil {
				t.Errorf("GetByKey(ns/a) after its page = %v, %v: the page is not in the store", ok, err)
			}
			if s, err := st.State(); err != nil || s.Complete || s.ResourceVersion != "" || s.Objects != 3 {
				t.Errorf("State after the first page = %+v, %v; want 3 objects, incomplete, no resourceVersion", s, err)
			}
			equalEvents(t, rec.Snapshot(), adds(page1...))
			if inf.HasSynced() {
				t.Error("HasSynced before the list ended")
			}
			h.pushPage(page2...)
			h.endRelist("10")
			equalEvents(t, rec.Snapshot(), adds(append(page1, page2...)...))
			if s, err := st.State(); err != nil || !s.Complete || s.ResourceVersion != "10" || s.Objects != 5 {
				t.Errorf("State after the list = %+v, %v; want 5 objects, complete at 10", s, err)
			}
			if n := st.scans.Load(); n != 0 {
				t.Errorf("%d scans of the store for a cold start, want none", n)
			}
			look.mu.Lock()
			defer look.mu.Unlock()
			if len(look.misses) > 0 {
				t.Errorf("handlers told of objects the store did not hold yet: %q", look.misses)
			}
		})
	}
}

// TestAbortedFillThenRelist: a cold-start list that breaks after two
// pages leaves the handlers told of those pages and the store holding
// them; the relist that follows is diffed against them: one update, one
// delete, one add, and no object added twice.
func TestAbortedFillThenRelist(t *testing.T) {
	for name, newStore := range testStores() {
		t.Run(name, func(t *testing.T) {
			st := newStore(t)
			rec, h := recordedHarness(t, st)
			a, b, c, d := testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3"), testkit.Pod("d", "4")
			h.must(h.q.BeginReplace(h.ctx))
			h.pushPage(a, b)
			h.pushPage(c, d)
			h.must(h.q.AbortReplace())
			h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceAbort })
			if s, err := st.State(); err != nil || s.Complete || s.ResourceVersion != "" || s.Objects != 4 {
				t.Errorf("State after the aborted list = %+v, %v; want its 4 objects, incomplete, no resourceVersion", s, err)
			}
			// b changed, c is gone, e is new.
			h.relist("20", testkit.Pod("a", "1"), testkit.Pod("b", "12"), testkit.Pod("d", "4"), testkit.Pod("e", "15"))
			h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd && b.ResourceVersion == "20" })
			want := append(adds(a, b, c, d), "update ns/b@2 -> ns/b@12", "delete dfsu(ns/c@3)", "add ns/e@15 initial=true")
			equalEvents(t, rec.Snapshot(), want)
			if s, err := st.State(); err != nil || !s.Complete || s.ResourceVersion != "20" || s.Objects != 4 {
				t.Errorf("State after the relist = %+v, %v; want 4 objects, complete at 20", s, err)
			}
		})
	}
}

// TestLateHandlerDuringFill: a handler added between two pages of a fill
// is replayed the objects filled so far at once, then told the later
// pages with the others: every object exactly once.
func TestLateHandlerDuringFill(t *testing.T) {
	for name, newStore := range testStores() {
		t.Run(name, func(t *testing.T) {
			inf := newTestInformer(t, Options{Store: newStore(t)})
			early := newRecorder()
			if _, err := inf.AddEventHandler(early); err != nil {
				t.Fatal(err)
			}
			h := startHarness(t, inf)
			page1 := []interface{}{testkit.Pod("a", "1"), testkit.Pod("b", "2")}
			page2 := []interface{}{testkit.Pod("c", "3"), testkit.Pod("d", "4")}
			h.must(h.q.BeginReplace(h.ctx))
			h.pushPage(page1...)
			late := newRecorder()
			if _, err := inf.AddEventHandler(late); err != nil {
				t.Fatal(err)
			}
			waitLateServed(t, inf)
			equalEvents(t, late.Snapshot(), adds(page1...))
			h.pushPage(page2...)
			h.endRelist("10")
			all := adds(append(page1, page2...)...)
			equalEvents(t, early.Snapshot(), all)
			equalEvents(t, late.Snapshot(), all)
		})
	}
}

// refusingFiller is a store.Filler whose BeginFill always finds the store
// not empty, as when something else wrote to it since its State was read.
type refusingFiller struct{ store.Store }

func (refusingFiller) BeginFill(context.Context) (store.Fill, error) {
	return nil, fmt.Errorf("test: %w", store.ErrNotEmpty)
}

// TestFillRefusedFallsBackToReplace: a fill the store refuses as not
// empty is not retried: the relist is staged and diffed as for any store.
func TestFillRefusedFallsBackToReplace(t *testing.T) {
	st := refusingFiller{newMemStore(t)}
	rec, h := recordedHarness(t, st)
	a, b := testkit.Pod("a", "1"), testkit.Pod("b", "2")
	h.relist("10", b, a)
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd })
	equalEvents(t, rec.Snapshot(), adds(a, b))
	if s, err := st.State(); err != nil || !s.Complete || s.ResourceVersion != "10" || s.Objects != 2 {
		t.Errorf("State after the relist = %+v, %v; want 2 objects, complete at 10", s, err)
	}
}

// TestFillKeyListedTwice: a key a cold start's list holds twice (a custom
// ListerWatcher's doing; kube-apiserver never lists a key twice), in two
// pages or in one, is stored once, as its last object, and told to the
// handlers as an add and then an update from the object told before, as
// client-go's informer tells it: never as two adds.
func TestFillKeyListedTwice(t *testing.T) {
	for name, newStore := range testStores() {
		t.Run(name, func(t *testing.T) {
			st := newStore(t)
			rec, h := recordedHarness(t, st)
			h.must(h.q.BeginReplace(h.ctx))
			h.pushPage(testkit.Pod("a", "1"), testkit.Pod("b", "2"))
			h.pushPage(testkit.Pod("a", "3"), testkit.Pod("c", "4"), testkit.Pod("c", "5"))
			h.endRelist("10")
			h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd })
			if s, err := st.State(); err != nil || s.Objects != 3 {
				t.Fatalf("State = %+v, %v; want 3 objects", s, err)
			}
			want := []handlertest.Event{
				"add ns/a@1 initial=true",
				"add ns/b@2 initial=true",
				"update ns/a@1 -> ns/a@3",
				"add ns/c@4 initial=true",
				"update ns/c@4 -> ns/c@5",
			}
			if got := rec.Snapshot(); !slices.Equal(got, want) {
				t.Fatalf("handler told\n%q\nwant\n%q", got, want)
			}
			for key, rv := range map[string]string{"ns/a": "3", "ns/c": "5"} {
				obj, ok, err := st.GetByKey(key)
				if err != nil || !ok || handlertest.Describe(obj) != key+"@"+rv {
					t.Errorf("stored %s = %v, %v, %v; want %s@%s", key, handlertest.Describe(obj), ok, err, key, rv)
				}
			}
		})
	}
}
