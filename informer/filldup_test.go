package informer

import (
	"slices"
	"testing"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/handlertest"
)

// TestFillKeyListedTwice: a key a cold start's list holds twice (a custom
// ListerWatcher's doing; kube-apiserver never lists a key twice), in two
// pages or in one, is stored once, as its last object, and told to the
// handlers as an add and then an update from the object told before, as
// client-go's informer tells it: never as two adds.
func TestFillKeyListedTwice(t *testing.T) {
	for name, newStore := range testStores() {
		t.Run(name, func(t *testing.T) {
			st := newStore(t)
			inf := newTestInformer(t, Options{Store: st})
			rec := newRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			h := startHarness(t, inf)
			h.must(h.q.BeginReplace(h.ctx))
			h.pushPage(pod("a", "1"), pod("b", "2"))
			h.pushPage(pod("a", "3"), pod("c", "4"), pod("c", "5"))
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
