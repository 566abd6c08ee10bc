package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/memrelease"
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

// TestRelistReleasesMemory checks that the start, until it synced, and
// every relist are counted by the releaser from their begin to their end,
// and that a committed relist of releaseAfterListed objects or more asks
// for its memory to be returned, each time, once its changes were told, as
// the start does once synced on as many objects, unless KeepListMemory is
// set; smaller ones do not: on every store, through a fill and a relist.
func TestRelistReleasesMemory(t *testing.T) {
	t.Setenv(EnvKeepListMemory, "false")
	for sname, newStore := range testStores() {
		for _, tc := range []struct {
			name    string
			objects int
			keep    bool
			asks    bool
		}{
			{"large", releaseAfterListed, false, true},
			{"small", releaseAfterListed - 1, false, false},
			{"kept", releaseAfterListed, true, false},
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
				if b, e, a := rel.counts(); b != 1 || e != 0 || a != 0 {
					t.Fatalf("once started: %d begun, %d ended, %d asked; want the start begun", b, e, a)
				}
				asks := func(n int) int {
					if tc.asks {
						return n
					}
					return 0
				}
				objs := make([]interface{}, tc.objects)
				for i := range objs {
					objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "2")
				}
				h.relist("5", objs...)
				h.waitIdle("6")
				if !inf.HasSynced() {
					t.Fatal("not synced after the first relist")
				}
				// The relist and the start, synced.
				if b, e, a := rel.counts(); b != 2 || e != 2 || a != asks(2) {
					t.Fatalf("after a relist of %d objects: %d begun, %d ended, %d asked; want 2, 2, %d", tc.objects, b, e, a, asks(2))
				}
				// The second relist changes every object: its updates are
				// told before it ends.
				objs = make([]interface{}, tc.objects) // the queue owns the first page
				for i := range objs {
					objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "7")
				}
				h.relist("7", objs...)
				h.waitIdle("8")
				if b, e, a := rel.counts(); b != 3 || e != 3 || a != asks(3) {
					t.Fatalf("after two relists of %d objects: %d begun, %d ended, %d asked; want 3, 3, %d", tc.objects, b, e, a, asks(3))
				}
				if got := rel.notifiedAtEnd[2]; got < 2*tc.objects-2 {
					t.Errorf("the second relist ended after %d notifications, want its %d updates told first", got, tc.objects)
				}
				h.stop()
				if b, e, _ := rel.counts(); b != 3 || e != 3 {
					t.Fatalf("after stop: %d begun, %d ended; want 3 each", b, e)
				}
			})
		}
	}
}

// TestAbortedRelistEnds checks that a relist aborted midway, and one open
// when the informer stops, end for the releaser, asking as a committed
// one would when they listed releaseAfterListed objects or more.
func TestAbortedRelistEnds(t *testing.T) {
	t.Setenv(EnvKeepListMemory, "false")
	inf := newTestInformer(t, Options{})
	rel := &releaseRecorder{notified: func() int { return 0 }}
	inf.releaser = rel
	h := startHarness(t, inf)
	pods := func(n int, rv string) []interface{} {
		objs := make([]interface{}, n)
		for i := range objs {
			objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), rv)
		}
		return objs
	}
	h.must(h.q.BeginReplace(h.ctx))
	h.must(h.q.ReplacePage(h.ctx, pods(10, "2")))
	h.must(h.q.AbortReplace()) // a list that failed midway, too small to ask
	h.relist("5", pods(releaseAfterListed, "2")...)
	h.waitIdle("6")
	h.must(h.q.BeginReplace(h.ctx))
	h.must(h.q.ReplacePage(h.ctx, pods(releaseAfterListed, "9")))
	// The queue splits the page; wait until the loop has handled all of
	// it: every object after the third begin (h.handled is locked here).
	h.waitBatch(func(deltafifo.Batch) bool {
		begins, listed := 0, 0
		for _, b := range h.handled {
			switch b.Kind {
			case deltafifo.KindReplaceBegin:
				begins, listed = begins+1, 0
			case deltafifo.KindReplacePage:
				listed += len(b.Objects)
			}
		}
		return begins >= 2 && listed == releaseAfterListed && h.handled[len(h.handled)-1].Kind == deltafifo.KindReplacePage
	})
	h.stop() // with the third open, all its objects listed
	// The start and two or three relists: the queue may drop the aborted
	// list before the loop begins it. The relist at 5, the start, synced
	// on it, and the relist open at the stop asked.
	if b, e, a := rel.counts(); b < 3 || e != b || a != 3 {
		t.Fatalf("%d begun, %d ended, %d asked; want as many ended as begun (3 or 4), 3 asked", b, e, a)
	}
}

// TestWarmReplayReleasesMemory checks that a warm start and its replay, a
// relist's kin, are counted by the releaser and ask for their memory to be
// returned once releaseAfterListed objects or more were told.
func TestWarmReplayReleasesMemory(t *testing.T) {
	t.Setenv(EnvKeepListMemory, "false")
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
			// The start and its replay, both asking or neither.
			want := 0
			if n >= releaseAfterListed {
				want = 2
			}
			if b, e, a := rel.counts(); b != 2 || e != 2 || a != want {
				t.Fatalf("after a replay of %d objects: %d begun, %d ended, %d asked; want 2, 2, %d", n, b, e, a, want)
			}
		})
	}
}

// TestStartEndsAtStop checks that a start that never synced ends for the
// releaser when the informer stops, without asking.
func TestStartEndsAtStop(t *testing.T) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return nil, errors.New("the server refuses the list")
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("the server refuses the watch")
		},
	}
	l := ktesting.NewLogger(t, ktesting.NewConfig())
	inf, err := New(lw, &corev1.Pod{}, Options{Store: newMemStore(t), Logger: &l})
	if err != nil {
		t.Fatal(err)
	}
	rel := &releaseRecorder{notified: func() int { return 0 }}
	inf.releaser = rel
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, testkit.Timeout(), true, func(context.Context) (bool, error) {
		b, _, _ := rel.counts()
		return b == 1, nil
	}); err != nil {
		t.Fatalf("the start never begun: %v", err)
	}
	cancel()
	<-done
	if b, e, a := rel.counts(); b != 1 || e != 1 || a != 0 || inf.HasSynced() {
		t.Fatalf("after a stop unsynced: %d begun, %d ended, %d asked, synced %v; want 1, 1, 0, false", b, e, a, inf.HasSynced())
	}
}

// TestReleaseInsideASyncTestBubble checks that the release an informer
// asks for inside a testing/synctest bubble waits and runs there, between
// informers outside it that ask for theirs and stop: the process's counts
// hold no timer that a goroutine of another bubble would touch, which the
// runtime refuses with a fatal error.
func TestReleaseInsideASyncTestBubble(t *testing.T) {
	objs := make([]interface{}, releaseAfterListed)
	for i := range objs {
		objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "2")
	}
	relist := func(t *testing.T, wait time.Duration) {
		inf := newTestInformer(t, Options{})
		h := startHarness(t, inf)
		h.relist("5", slices.Clone(objs)...) // the queue owns a page
		h.waitIdle("6")
		time.Sleep(wait) // in the bubble, past the release's delay
		h.stop()
	}
	relist(t, 0)
	synctest.Test(t, func(t *testing.T) {
		before := memrelease.Ask()
		relist(t, memrelease.MaxDelay)
		if before.Owed() {
			t.Error("no release ran in the bubble")
		}
	})
	relist(t, 0)
}

// TestEnvKeepListMemory checks that EnvKeepListMemory sets KeepListMemory
// for an informer that did not, and that a relist then asks nothing.
func TestEnvKeepListMemory(t *testing.T) {
	for env, want := range map[string]bool{"true": true, "1": true, "false": false, "": false, "nonsense": false} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(EnvKeepListMemory, env)
			o, err := Options{Store: newMemStore(t)}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if o.KeepListMemory != want {
				t.Fatalf("%s=%q: KeepListMemory %v, want %v", EnvKeepListMemory, env, o.KeepListMemory, want)
			}
		})
	}
	t.Setenv(EnvKeepListMemory, "true")
	inf := newTestInformer(t, Options{})
	rel := &releaseRecorder{notified: func() int { return 0 }}
	inf.releaser = rel
	h := startHarness(t, inf)
	objs := make([]interface{}, releaseAfterListed)
	for i := range objs {
		objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "2")
	}
	h.relist("5", objs...)
	h.waitIdle("6")
	if b, e, a := rel.counts(); b != 2 || e != 2 || a != 0 {
		t.Fatalf("%d begun, %d ended, %d asked; want 2, 2, 0", b, e, a)
	}
}
