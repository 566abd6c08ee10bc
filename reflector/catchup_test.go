package reflector

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// catchUpSource is a source whose watch timeouts and pre-timeout
// bookmarks run on a clock of their own, which the test steps: pods a, b,
// c at RVs 2..4.
func catchUpSource(t *testing.T, opts fakesource.Options) (*fakesource.Source, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Unix(20000, 0))
	opts.Clock = clk
	return newSource(t, opts, "a", "b", "c"), clk
}

// otherKind moves the server's resourceVersion without touching pods, as
// leases and events do on a real cluster.
func otherKind(t *testing.T, src *fakesource.Source) {
	t.Helper()
	if _, err := src.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lease"}}); err != nil {
		t.Fatal(err)
	}
}

// waitWatches waits for the source to have served n watch requests and
// returns them.
func waitWatches(t *testing.T, src *fakesource.Source, n int) []fakesource.Request {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout())
	for {
		w := requests(src, "watch")
		if len(w) >= n {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watch requests within %v, want %d", len(w), testkit.Timeout(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// stepWatch waits until the source's one open watch has armed its timers
// (its timeout and its pre-timeout bookmark), then steps the source's
// clock by d.
func stepWatch(t *testing.T, src *fakesource.Source, clk *testingclock.FakeClock, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout())
	for src.Stats().OpenWatches != 1 || clk.Waiters() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no open watch with its timers within %v: %+v, %d timers", testkit.Timeout(), src.Stats().Counts, clk.Waiters())
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(d)
}

// stepWatchTimeout is stepWatch for a watch without a pre-timeout
// bookmark (a source without the watch cache): one timer, its timeout,
// which it steps to.
func stepWatchTimeout(t *testing.T, src *fakesource.Source, clk *testingclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout())
	for src.Stats().OpenWatches != 1 || clk.Waiters() < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no open watch with its timer within %v", testkit.Timeout())
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(3 * time.Second)
}

// TestCatchUpBacklog: the pods changed while the reflector was down. The
// resumed watch delivers the changes, and MarkSynced follows the first
// event at the server's resourceVersion, never before: synced means
// caught up. The catch-up watch asks for a short timeout; once synced, the
// next watch asks for the usual one.
func TestCatchUpBacklog(t *testing.T) {
	src, srcClk := catchUpSource(t, fakesource.Options{})
	sink := newRecorder()
	sink.seed(src)
	mustAdd(t, src, testkit.Pod("d", ""))    // 5
	mustUpdate(t, src, podL("a", "2"))       // 6
	mustDelete(t, src, testkit.Pod("b", "")) // 7
	h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }})
	calls := sink.waitCall(t, "MarkSynced")
	if want := []string{"Add d@5", "Update a@6", "Delete b@7", "MarkSynced"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	h.clk.noBackoff(t, catchUpQuiet) // no settle timer: the sync is exact
	w := waitWatches(t, src, 1)[0].Options
	if w.ResourceVersion != "4" || !w.AllowWatchBookmarks || w.TimeoutSeconds == nil || *w.TimeoutSeconds != 3 {
		t.Fatalf("catch-up watch options = %+v, want RV 4, bookmarks and a timeout of 3s", w)
	}
	// The catch-up watch times out; the next one is an ordinary watch.
	stepWatch(t, src, srcClk, 3*time.Second)
	w = waitWatches(t, src, 2)[1].Options
	if w.ResourceVersion != "7" || w.TimeoutSeconds == nil || *w.TimeoutSeconds < int64(DefaultMinWatchTimeout/time.Second) {
		t.Fatalf("watch after the sync = %+v, want RV 7 and a timeout of at least %v", w, DefaultMinWatchTimeout)
	}
	mustAdd(t, src, testkit.Pod("e", "")) // 8
	sink.waitCall(t, "Add e@8")
	sink.checkModel(t, src)
	if n := count(sink.snapshot(), "MarkSynced"); n != 1 {
		t.Fatalf("%d MarkSynced, want 1", n)
	}
}

// TestCatchUpIdleResource: nothing changed in the pods while the
// reflector was down, but the server's resourceVersion moved (another
// kind). The resumed watch has no event to deliver: the watch cache's
// pre-timeout bookmark, at the server's resourceVersion, is what shows it
// caught up. Until then nothing is pushed.
func TestCatchUpIdleResource(t *testing.T) {
	src, srcClk := catchUpSource(t, fakesource.Options{})
	sink := newRecorder()
	sink.seed(src)
	otherKind(t, src) // 5
	h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }})
	waitWatches(t, src, 1)
	if calls := sink.snapshot(); len(calls) != 0 {
		t.Fatalf("sink calls %v before the bookmark, want none", calls)
	}
	stepWatch(t, src, srcClk, time.Second) // the timeout (3s) minus 2s
	calls := sink.waitCall(t, "MarkSynced")
	if want := []string{"Bookmark 5", "MarkSynced"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	h.clk.noBackoff(t, catchUpQuiet)
	if rv := h.stoppedRV(); rv != "5" {
		t.Fatalf("LastSyncResourceVersion %q, want 5", rv)
	}
}

// TestCatchUpBookmarkBelowTarget: a bookmark older than the server's
// resourceVersion at the resume check (a watch cache lagging behind etcd)
// does not sync; a later one does.
func TestCatchUpBookmarkBelowTarget(t *testing.T) {
	cu := catchUp{pending: true, mode: catchUpTarget, target: "10"}
	for _, tc := range []struct {
		rv   string
		want bool
	}{{"9", false}, {"", false}, {"x", false}, {"10", true}, {"11", true}} {
		if got := cu.reached(tc.rv); got != tc.want {
			t.Errorf("reached(%q) = %v, want %v", tc.rv, got, tc.want)
		}
	}
	for _, other := range []catchUp{
		{pending: false, mode: catchUpTarget, target: "10"},
		{pending: true, mode: catchUpOpen, target: "10"},
		{pending: true, mode: catchUpSettle},
	} {
		if other.reached("11") {
			t.Errorf("%+v reached 11, want only a pending catchUpTarget to", other)
		}
	}
}

// TestCatchUpWithoutBookmarks: a server without the watch cache sends no
// bookmarks, so an idle resource's resumed watch stays silent until its
// timeout. That silence proves nothing: after two such watches in a row,
// the reflector relists the most recent state (a consistent list), whose
// EndReplace syncs, and pushes no MarkSynced at all.
func TestCatchUpWithoutBookmarks(t *testing.T) {
	for _, policy := range []WatchListPolicy{WatchListAuto, WatchListOff} {
		t.Run(map[WatchListPolicy]string{WatchListAuto: "WatchList", WatchListOff: "LIST"}[policy], func(t *testing.T) {
			src, srcClk := catchUpSource(t, fakesource.Options{DisableWatchCache: true})
			sink := newRecorder()
			sink.seed(src)
			otherKind(t, src) // 5
			errs := &errorLog{}
			h := run(t, src, sink, Options{
				ResumeFrom:        func() (string, bool) { return "4", true },
				UseWatchList:      policy,
				WatchErrorHandler: errs.handle,
			})
			// Two catch-up watches in a row time out, silent.
			for i := range quietCatchUps {
				waitWatches(t, src, i+1)
				h.clk.Step(3 * time.Second)
				stepWatchTimeout(t, src, srcClk)
			}
			calls := sink.waitCall(t, "EndReplace 5")
			if want := []string{"BeginReplace", "ReplacePage a,b,c", "EndReplace 5"}; !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			h.clk.noBackoff(t, catchUpQuiet) // relisted at once, no backoff
			switch policy {
			case WatchListAuto:
				wl := waitWatches(t, src, quietCatchUps+1)[quietCatchUps].Options
				if wl.SendInitialEvents == nil || !*wl.SendInitialEvents || wl.ResourceVersion != "" {
					t.Fatalf("relist = %+v, want a WatchList of the most recent state", wl)
				}
			case WatchListOff:
				lists := requests(src, "list")
				if l := lists[len(lists)-1].Options; l.ResourceVersion != "" {
					t.Fatalf("relist = %+v, want a LIST of the most recent state", l)
				}
			}
			if got := errs.get(); len(got) != 0 {
				t.Fatalf("WatchErrorHandler got %v, want nothing: the relist is how such a server syncs", got)
			}
			sink.checkModel(t, src)
		})
	}
}

// TestCatchUpWatchClosedEarly: a catch-up watch that closes before its
// timeout (the server restarted, a proxy cut it) proves nothing either
// way: the reflector watches again from the last RV, still catching up,
// and the next watch's bookmark syncs.
func TestCatchUpWatchClosedEarly(t *testing.T) {
	src, srcClk := catchUpSource(t, fakesource.Options{})
	sink := newRecorder()
	sink.seed(src)
	mustAdd(t, src, testkit.Pod("d", "")) // 5
	otherKind(t, src)                     // 6
	src.FailWatches(1, fakesource.Fault{AfterEvents: 1})
	h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }})
	sink.waitCall(t, "Add d@5")
	// The first watch closed after one event, below the target: a new
	// catch-up watch from 5, at once (it delivered an event).
	w := waitWatches(t, src, 2)[1].Options
	if w.ResourceVersion != "5" || w.TimeoutSeconds == nil || *w.TimeoutSeconds != 3 {
		t.Fatalf("second watch = %+v, want a catch-up watch from 5", w)
	}
	if calls := sink.snapshot(); count(calls, "MarkSynced") != 0 {
		t.Fatalf("sink calls %v: synced before the target", calls)
	}
	stepWatch(t, src, srcClk, time.Second)
	calls := sink.waitCall(t, "MarkSynced")
	if want := []string{"Add d@5", "Bookmark 6", "MarkSynced"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	h.clk.noBackoff(t, catchUpQuiet)
}

// TestCatchUpTimeoutOption validates Options.CatchUpTimeout.
func TestCatchUpTimeoutOption(t *testing.T) {
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {3 * time.Second, true}, {10 * time.Second, true}, {2 * time.Second, false}, {3500 * time.Millisecond, false}, {-time.Second, false}} {
		_, err := Options{CatchUpTimeout: tc.d}.withDefaults(nil)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
			t.Errorf("CatchUpTimeout %v: err %v, want ok=%v", tc.d, err, tc.ok)
		}
	}
}

// storedVersions is Options.StoredVersions over the recorder's model of
// the store.
func storedVersions(sink *recorder) func(max int) (map[string]string, cache.KeyFunc, bool) {
	return func(max int) (map[string]string, cache.KeyFunc, bool) {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if len(sink.items) > max {
			return nil, nil, false
		}
		out := make(map[string]string, len(sink.items))
		for k, rv := range sink.items {
			out[k] = rv
		}
		return out, cache.MetaNamespaceKeyFunc, true
	}
}

// TestResumeSmallStore: a store of at most a page of objects is checked
// whole by the resume check (a LIST of a page, one request). Unchanged
// since the stored RV (only another kind moved the server's RV): a
// bookmark at the list's RV and MarkSynced at once, then a watch from
// there, with no wait for the catch-up. Changed: the page is the relist
// (its EndReplace syncs, no MarkSynced). Grown past the page: the watch
// catches up as for a large store.
func TestResumeSmallStore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    func(t *testing.T, src *fakesource.Source)
		pageSize  int64
		wantCalls []string
		wantLimit int64
	}{
		{"unchanged", func(t *testing.T, src *fakesource.Source) { otherKind(t, src) }, 0,
			[]string{"Bookmark 5", "MarkSynced"}, DefaultListPageSize},
		{"changed", func(t *testing.T, src *fakesource.Source) {
			mustUpdate(t, src, podL("a", "2"))       // 5
			mustDelete(t, src, testkit.Pod("b", "")) // 6
			otherKind(t, src)                        // 7
		}, 0, []string{"BeginReplace", "ReplacePage a,c", "EndReplace 7"}, DefaultListPageSize},
		{"grown past the page", func(t *testing.T, src *fakesource.Source) {
			mustAdd(t, src, testkit.Pod("d", "")) // 5
			mustAdd(t, src, testkit.Pod("e", "")) // 6
		}, 4, []string{"Add d@5", "Add e@6", "MarkSynced"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, _ := catchUpSource(t, fakesource.Options{})
			sink := newRecorder()
			sink.seed(src)
			tc.change(t, src)
			m := &countingMetrics{}
			h := run(t, src, sink, Options{
				ResumeFrom:     func() (string, bool) { return "4", true },
				StoredVersions: storedVersions(sink),
				ListPageSize:   tc.pageSize,
				Metrics:        m,
			})
			calls := sink.waitCall(t, tc.wantCalls[len(tc.wantCalls)-1])
			if !reflect.DeepEqual(calls, tc.wantCalls) {
				t.Fatalf("sink calls = %v, want %v", calls, tc.wantCalls)
			}
			h.clk.noBackoff(t, catchUpQuiet)
			lists := requests(src, "list")
			if len(lists) != 1 || lists[0].Options.Limit != tc.wantLimit || lists[0].Options.ResourceVersion != "" {
				t.Fatalf("lists %+v, want one consistent LIST of limit %d", lists, tc.wantLimit)
			}
			w := waitWatches(t, src, 1)[0].Options
			if want := src.ResourceVersion(); tc.name != "grown past the page" && w.ResourceVersion != want {
				t.Fatalf("watch from %s, want the list's resourceVersion %s", w.ResourceVersion, want)
			}
			_, _, _, relists, resumes, _ := m.get()
			if wantRelists := map[string]int{"changed": 1}[tc.name]; relists != wantRelists || resumes != 1-wantRelists {
				t.Fatalf("metrics relists=%d resumes=%d, want %d and %d", relists, resumes, wantRelists, 1-wantRelists)
			}
			sink.checkModel(t, src)
		})
	}
}

// timeoutDropper is a ListerWatcher in front of a server behind a proxy
// that drops timeoutSeconds: its watches stay open until stopped.
type timeoutDropper struct{ *fakesource.Endpoint }

func (d timeoutDropper) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.TimeoutSeconds = nil
	return d.Endpoint.WatchWithContext(ctx, opts)
}

// TestCatchUpWatchKeptOpenSilent: a catch-up watch on a server without
// bookmarks that a proxy keeps open past its timeout is ended by the
// reflector once silent for the timeout and quietGrace, and the warm start
// relists as after a server's silent timeouts.
func TestCatchUpWatchKeptOpenSilent(t *testing.T) {
	src := newSource(t, fakesource.Options{DisableWatchCache: true}, "a", "b", "c")
	sink := newRecorder()
	sink.seed(src)
	otherKind(t, src) // 5
	clk := newClock()
	r, err := New(timeoutDropper{src.Endpoint(podGVK, "")}, &corev1.Pod{}, sink, Options{
		ResumeFrom: func() (string, bool) { return "4", true },
		Clock:      clk,
		Backoff:    noJitter(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	for range quietCatchUps {
		if d := clk.nextTimer(t); d != catchUpQuiet {
			t.Fatalf("timer of %v, want the catch-up watch's bound %v", d, catchUpQuiet)
		}
		clk.Step(catchUpQuiet)
	}
	calls := sink.waitCall(t, "EndReplace 5")
	if want := []string{"BeginReplace", "ReplacePage a,b,c", "EndReplace 5"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
}
