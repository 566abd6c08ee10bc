package informer

import (
	"fmt"
	"sync"
	"testing"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// releaseRecorder records an informer's Begin and End calls to its
// releaser.
type releaseRecorder struct {
	mu            sync.Mutex
	begun, asked  int
	ended         int
	notifiedAtEnd []int // handler notifications seen at each End
	notified      func() int
}

func (r *releaseRecorder) Begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begun++
}

func (r *releaseRecorder) End(release bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended++
	if release {
		r.asked++
	}
	r.notifiedAtEnd = append(r.notifiedAtEnd, r.notified())
}

func (r *releaseRecorder) counts() (begun, ended, asked int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.begun, r.ended, r.asked
}

// TestRelistReleasesMemory checks that every relist is counted by the
// releaser from its begin to its end, and that a committed relist of
// releaseAfterListed objects or more asks for its memory to be returned,
// each time, once its changes were told, unless KeepListMemory is set;
// a smaller one does not: on every store, through a fill and a relist.
func TestRelistReleasesMemory(t *testing.T) {
	for sname, newStore := range testStores() {
		for _, tc := range []struct {
			name    string
			objects int
			keep    bool
			want    int
		}{
			{"large", releaseAfterListed, false, 2},
			{"small", releaseAfterListed - 1, false, 0},
			{"kept", releaseAfterListed, true, 0},
		} {
			t.Run(sname+"/"+tc.name, func(t *testing.T) {
				// ReplayPending 1: a relist's notifications are delivered as
				// they are distributed, so that what the handler was told at
				// End is what the relist had told.
				inf := newTestInformer(t, Options{Store: newStore(t), KeepListMemory: tc.keep, ReplayPending: 1})
				rec := newRecorder()
				if _, err := inf.AddEventHandler(rec); err != nil {
					t.Fatal(err)
				}
				rel := &releaseRecorder{notified: func() int { return len(rec.Snapshot()) }}
				inf.releaser = rel
				h := startHarness(t, inf)
				objs := make([]interface{}, tc.objects)
				for i := range objs {
					objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "2")
				}
				h.relist("5", objs...)
				h.waitIdle("6")
				if b, e, a := rel.counts(); b != 1 || e != 1 || a != min(tc.want, 1) {
					t.Fatalf("after a relist of %d objects: %d begun, %d ended, %d asked; want 1, 1, %d", tc.objects, b, e, a, min(tc.want, 1))
				}
				// The second relist changes every object: its updates are
				// told before it ends.
				for i := range objs {
					objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "7")
				}
				h.relist("7", objs...)
				h.waitIdle("8")
				if b, e, a := rel.counts(); b != 2 || e != 2 || a != tc.want {
					t.Fatalf("after two relists of %d objects: %d begun, %d ended, %d asked; want 2, 2, %d", tc.objects, b, e, a, tc.want)
				}
				if got := rel.notifiedAtEnd[1]; got < 2*tc.objects-2 {
					t.Errorf("the second relist ended after %d notifications, want its %d updates told first", got, tc.objects)
				}
			})
		}
	}
}

// TestAbortedRelistEnds checks that a relist aborted midway, and one open
// when the informer stops, end for the releaser without asking.
func TestAbortedRelistEnds(t *testing.T) {
	inf := newTestInformer(t, Options{})
	rel := &releaseRecorder{notified: func() int { return 0 }}
	inf.releaser = rel
	h := startHarness(t, inf)
	objs := make([]interface{}, releaseAfterListed)
	for i := range objs {
		objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "2")
	}
	h.must(h.q.BeginReplace(h.ctx))
	h.must(h.q.ReplacePage(h.ctx, objs))
	h.must(h.q.AbortReplace()) // a list that failed midway
	h.relist("5", objs...)
	h.waitIdle("6")
	third := testkit.Pod("third", "9")
	h.must(h.q.BeginReplace(h.ctx))
	h.must(h.q.ReplacePage(h.ctx, []interface{}{third}))
	h.waitBatch(func(b deltafifo.Batch) bool {
		return b.Kind == deltafifo.KindReplacePage && len(b.Objects) == 1 && b.Objects[0] == third
	})
	h.stop() // with the third open
	// The queue may drop the aborted list before the loop begins it.
	if b, e, a := rel.counts(); b < 2 || e != b || a != 1 {
		t.Fatalf("%d begun, %d ended, %d asked; want as many ended as begun (2 or 3), 1 asked", b, e, a)
	}
}

// TestWarmReplayReleasesMemory checks that the replay of a warm start, a
// relist's kin, is counted by the releaser and asks for its memory to be
// returned once it has told releaseAfterListed objects or more.
func TestWarmReplayReleasesMemory(t *testing.T) {
	for _, n := range []int{releaseAfterListed, releaseAfterListed - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			mem := newMemStore(t)
			objs := make([]interface{}, n)
			for i := range objs {
				objs[i] = testkit.Pod(fmt.Sprintf("p%05d", i), "2")
			}
			if err := mem.Replace(objs, "3"); err != nil {
				t.Fatal(err)
			}
			inf := newTestInformer(t, Options{Store: mem})
			rec := newRecorder()
			r, err := inf.AddEventHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			rel := &releaseRecorder{notified: func() int { return len(rec.Snapshot()) }}
			inf.releaser = rel
			h := startHarness(t, inf) // warm start: the store is complete
			h.must(h.q.MarkSynced(h.ctx))
			<-r.HasSyncedChecker().Done()
			h.waitIdle("4") // the loop is past the replay
			want := 0
			if n >= releaseAfterListed {
				want = 1
			}
			if b, e, a := rel.counts(); b != 1 || e != 1 || a != want {
				t.Fatalf("after a replay of %d objects: %d begun, %d ended, %d asked; want 1, 1, %d", n, b, e, a, want)
			}
		})
	}
}
