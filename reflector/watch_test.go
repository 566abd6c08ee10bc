package reflector

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestBookmarksReachTheSinkInOrder(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a") // RV 2
	sink := newRecorder()
	h := run(t, src, sink, Options{})
	sink.waitCall(t, "EndReplace 2")
	steps := []struct {
		do   func()
		want string
	}{
		{func() { mustAdd(t, src, testkit.Pod("x", "")) }, "Add x@3"},
		{func() { src.SendBookmark() }, "Bookmark 3"},
		{func() { mustUpdate(t, src, podL("x", "1")) }, "Update x@4"},
		{func() {
			// A change of another kind moves the RV past the last pod event.
			if _, err := src.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}); err != nil {
				t.Fatal(err)
			}
			src.SendBookmark()
		}, "Bookmark 5"},
		{func() { mustDelete(t, src, testkit.Pod("x", "")) }, "Delete x@6"},
	}
	for _, s := range steps {
		s.do()
		sink.waitCall(t, s.want)
	}
	calls := sink.snapshot()
	want := []string{"BeginReplace", "ReplacePage a", "EndReplace 2", "Add x@3", "Bookmark 3", "Update x@4", "Bookmark 5", "Delete x@6"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	if got := h.stoppedRV(); got != "6" {
		t.Fatalf("LastSyncResourceVersion = %s, want 6", got)
	}
	sink.checkModel(t, src)
}

// TestRestartRewatchesThenRelists: an apiserver restart ends the watch
// cleanly; the reflector watches again from its last RV, which the
// restarted server no longer has (410), and relists.
func TestRestartRewatchesThenRelists(t *testing.T) {
	for _, mode := range []fakesource.WatchListMode{fakesource.WatchListSupported, fakesource.WatchListRejected} {
		t.Run("mode="+strconv.Itoa(int(mode)), func(t *testing.T) {
			src := newSource(t, fakesource.Options{WatchList: mode}, "a", "b") // RV 3
			sink := newRecorder()
			entered, release := make(chan struct{}), make(chan struct{})
			sink.hook = func(ctx context.Context, call string) error {
				if call == "Add x@4" {
					close(entered)
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			}
			h := run(t, src, sink, Options{})
			sink.waitCall(t, "EndReplace 3")
			mustAdd(t, src, testkit.Pod("x", "")) // 4: the reflector blocks pushing it
			select {
			case <-entered:
			case <-time.After(testkit.Timeout()):
				t.Fatalf("Add x@4 not pushed within %v", testkit.Timeout())
			}
			// The cluster stays healthy long enough for a 410 to relist at
			// once. The clock moves only now that the reflector is
			// watching: it notes when the relist completed after the Sink
			// accepted EndReplace, so a step right after the test saw
			// EndReplace could come before that note and make the 410 back
			// off instead.
			h.clk.Step(DefaultBackoffReset)
			mustAdd(t, src, testkit.Pod("y", "")) // 5: never delivered by the old watch
			src.Restart()
			close(release)
			calls := sink.waitCall(t, "EndReplace 5")
			want := []string{"BeginReplace", "ReplacePage a,b", "EndReplace 3", "Add x@4", "BeginReplace", "ReplacePage a,b,x,y", "EndReplace 5"}
			if !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			h.clk.noTimer(t)
			var rewatch bool
			for _, r := range requests(src, "watch") {
				if r.Options.ResourceVersion == "4" && r.Options.SendInitialEvents == nil {
					rewatch = true
				}
			}
			if !rewatch {
				t.Fatalf("no watch from RV 4 after the restart: %+v", requests(src, "watch"))
			}
			if mode == fakesource.WatchListRejected && src.Stats().WatchLists != 1 {
				t.Fatalf("%d WatchList requests, want 1: the server's refusal is remembered", src.Stats().WatchLists)
			}
			mustAdd(t, src, testkit.Pod("z", ""))
			sink.waitCall(t, "Add z@6")
			sink.checkModel(t, src)
		})
	}
}

// TestRepeated410BacksOff makes every watch fail with 410: the reflector
// relists, each time after a longer backoff, never in a hot loop.
func TestRepeated410BacksOff(t *testing.T) {
	for _, jitter := range []float64{0, 1} {
		t.Run("jitter="+strconv.FormatFloat(jitter, 'f', 0, 64), func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a")
			const failures = 5
			src.FailWatches(failures, fakesource.Fault{End: fakesource.EndExpired})
			sink := newRecorder()
			b := DefaultBackoff()
			b.Jitter = jitter
			var handled int
			h := run(t, src, sink, Options{UseWatchList: WatchListOff, Backoff: &b,
				WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) {
					if !isExpired(err) {
						t.Errorf("handled %v, want 410s only", err)
					}
					handled++
				}})
			base := 800 * time.Millisecond
			for i := 1; i <= failures; i++ {
				d := h.clk.nextTimer(t)
				if d < base || d > base+time.Duration(jitter*float64(base)) {
					t.Fatalf("backoff %d = %v, want within [%v, %v]", i, d, base, base+time.Duration(jitter*float64(base)))
				}
				if n := count(sink.snapshot(), "BeginReplace"); n != i {
					t.Fatalf("%d relists before backoff %d, want %d", n, i, i)
				}
				h.clk.Step(d - time.Nanosecond)
				if n := count(sink.snapshot(), "BeginReplace"); n != i {
					t.Fatalf("relisted before the backoff elapsed")
				}
				h.clk.Step(time.Nanosecond)
				base *= 2
			}
			sink.waitFor(t, "relist after the last 410", func(c []string) bool { return count(c, "EndReplace") == failures+1 })
			mustAdd(t, src, testkit.Pod("b", ""))
			sink.waitCall(t, "Add b@3")
			h.clk.noTimer(t)
			if handled != failures {
				t.Fatalf("handler saw %d errors, want %d", handled, failures)
			}
			sink.checkModel(t, src)
		})
	}
}

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	t.Run("watch", func(t *testing.T) {
		src := newSource(t, fakesource.Options{}, "a")
		src.FailWatches(1, fakesource.Fault{Err: fakesource.TooManyRequests(7)})
		sink := newRecorder()
		sink.seed(src)
		h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "2", true }, ResumeCheck: ResumeCheckOff})
		if d := h.clk.nextTimer(t); d != 7*time.Second {
			t.Fatalf("waited %v after 429, want its Retry-After 7s", d)
		}
		if calls := sink.snapshot(); len(calls) != 0 {
			t.Fatalf("sink calls before the watch opened: %v", calls)
		}
		h.clk.Step(7 * time.Second)
		// The resumed watch stays quiet: it syncs after the settle period.
		if d := h.clk.nextTimer(t); d != DefaultResumeSettle {
			t.Fatalf("timer of %v, want the settle period %v", d, DefaultResumeSettle)
		}
		h.clk.Step(DefaultResumeSettle)
		sink.waitCall(t, "MarkSynced")
		if st := src.Stats(); st.Lists != 0 || st.Watches != 2 {
			t.Fatalf("requests = %+v, want two watches and no list", st.Counts)
		}
	})
	t.Run("list", func(t *testing.T) {
		src := newSource(t, fakesource.Options{}, "a")
		src.FailLists(1, fakesource.TooManyRequests(5))
		sink := newRecorder()
		h := run(t, src, sink, Options{UseWatchList: WatchListOff})
		if d := h.clk.nextTimer(t); d != 5*time.Second {
			t.Fatalf("waited %v after 429, want its Retry-After 5s", d)
		}
		h.clk.Step(5 * time.Second)
		calls := sink.waitCall(t, "EndReplace 2")
		if want := []string{"BeginReplace", "ReplacePage a", "EndReplace 2"}; !reflect.DeepEqual(calls, want) {
			t.Fatalf("sink calls = %v, want %v (a failed list opens no replace)", calls, want)
		}
	})
}

func TestTooLargeResourceVersion(t *testing.T) {
	cases := []struct {
		name      string
		complete  bool
		policy    WatchListPolicy
		wantTimer bool
	}{
		// The watch from a future RV fails; relist from the most recent
		// state after a backoff.
		{"warm start, WatchList", true, WatchListAuto, true},
		{"warm start, LIST", true, WatchListOff, true},
		// The relist itself fails; retry at once from RV "".
		{"incomplete state, WatchList", false, WatchListAuto, false},
		{"incomplete state, LIST", false, WatchListOff, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b") // RV 3
			sink := newRecorder()
			h := run(t, src, sink, Options{UseWatchList: tc.policy, ResumeFrom: func() (string, bool) { return "100", tc.complete }, ResumeCheck: ResumeCheckOff})
			if tc.wantTimer {
				h.clk.Step(h.clk.nextTimer(t))
			}
			calls := sink.waitCall(t, "EndReplace 3")
			if count(calls, "BeginReplace") != 1 || count(calls, "MarkSynced") != 0 {
				t.Fatalf("sink calls = %v", calls)
			}
			var rvs []string
			for _, r := range src.Requests() {
				if r.Verb == "list" || r.Options.SendInitialEvents != nil || r.Options.ResourceVersion == "100" {
					rvs = append(rvs, r.Verb+"@"+r.Options.ResourceVersion)
				}
			}
			verb := "list"
			if tc.policy == WatchListAuto {
				verb = "watch"
			}
			want := []string{verb + "@100", verb + "@"}
			if tc.complete {
				want = []string{"watch@100", verb + "@"}
			}
			if !reflect.DeepEqual(rvs, want) {
				t.Fatalf("requests = %v, want %v", rvs, want)
			}
			h.clk.noTimer(t)
			sink.checkModel(t, src)
		})
	}
}

// TestWatchFailuresWithoutRelist checks the errors after which the
// reflector watches again from its last RV instead of relisting.
func TestWatchFailuresRewatchOrRelist(t *testing.T) {
	cases := []struct {
		name        string
		fault       fakesource.Fault
		maxInternal time.Duration
		wantTimer   bool
		wantRelist  bool
	}{
		{"connection refused", fakesource.Fault{Err: fakesource.ConnectionRefused()}, 0, true, false},
		{"500 on the request, within retry duration", fakesource.Fault{Err: fakesource.InternalError("etcd")}, time.Minute, true, false},
		{"500 on the request, no retry duration", fakesource.Fault{Err: fakesource.InternalError("etcd")}, 0, true, true},
		{"decode error, within retry duration", fakesource.Fault{AfterEvents: 1, End: fakesource.EndDecodeError}, time.Minute, true, false},
		{"decode error, no retry duration", fakesource.Fault{AfterEvents: 1, End: fakesource.EndDecodeError}, 0, true, true},
		{"closed after one event", fakesource.Fault{AfterEvents: 1, End: fakesource.EndClose}, 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a") // RV 2
			src.FailWatches(1, tc.fault)
			sink := newRecorder()
			h := run(t, src, sink, Options{UseWatchList: WatchListOff, MaxInternalErrorRetryDuration: tc.maxInternal})
			sink.waitCall(t, "EndReplace 2")
			mustAdd(t, src, testkit.Pod("x", "")) // 3
			var d time.Duration
			if tc.wantTimer {
				d = h.clk.nextTimer(t)
			}
			mustAdd(t, src, testkit.Pod("y", "")) // 4: a relist after the backoff lists it
			h.clk.Step(d)
			calls := sink.waitConverged(t, src)
			if tc.wantRelist == (count(calls, "Add y@4") == 1) {
				t.Fatalf("sink calls = %v: y pushed by a watch although relisting, or by a relist although not", calls)
			}
			if got := count(calls, "BeginReplace"); got != map[bool]int{false: 1, true: 2}[tc.wantRelist] {
				t.Fatalf("sink calls = %v, want relist %v", calls, tc.wantRelist)
			}
			if !tc.wantRelist {
				watches := requests(src, "watch")
				last := watches[len(watches)-1].Options.ResourceVersion
				wantRV := "2"
				if tc.fault.AfterEvents > 0 {
					wantRV = "3"
				}
				if len(watches) != 2 || last != wantRV {
					t.Fatalf("watches = %+v, want a second one from RV %s", watches, wantRV)
				}
			}
			h.clk.noTimer(t)
			sink.checkModel(t, src)
		})
	}
}

// TestVeryShortWatchesBackOff: a server that closes every watch at once
// must not cause a hot loop.
func TestVeryShortWatchesBackOff(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a")
	src.FailWatches(3, fakesource.Fault{End: fakesource.EndClose})
	sink := newRecorder()
	var mu sync.Mutex
	var handled []string
	h := run(t, src, sink, Options{UseWatchList: WatchListOff, WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, err.Error())
		// Watched again without a relist: the default handler logs it
		// at info level, as client-go's reflector does.
		if !errors.As(err, new(watchEnded)) {
			t.Errorf("handled %v, not marked as a watch that ended and is watched again", err)
		}
	}})
	for i, want := range []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond} {
		d := h.clk.nextTimer(t)
		if d != want {
			t.Fatalf("backoff %d = %v, want %v", i, d, want)
		}
		h.clk.Step(d)
	}
	mustAdd(t, src, testkit.Pod("b", ""))
	calls := sink.waitCall(t, "Add b@3")
	if count(calls, "BeginReplace") != 1 {
		t.Fatalf("relisted after short watches: %v", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 3 || !strings.Contains(handled[0], "very short watch") {
		t.Fatalf("handled = %v, want three very short watch errors", handled)
	}
}

// TestBookmarkAvoidsRelistAfterRestart: a bookmark moves the reflector's
// RV past changes of other kinds, so after an apiserver restart it
// resumes from the bookmark's RV without relisting.
func TestBookmarkAvoidsRelistAfterRestart(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a") // RV 2
	sink := newRecorder()
	h := run(t, src, sink, Options{})
	sink.waitCall(t, "EndReplace 2")
	if _, err := src.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}); err != nil {
		t.Fatal(err)
	}
	src.SendBookmark()
	sink.waitCall(t, "Bookmark 3")
	src.Restart() // compacts everything before RV 3
	mustAdd(t, src, testkit.Pod("b", ""))
	calls := sink.waitCall(t, "Add b@4")
	if count(calls, "BeginReplace") != 1 {
		t.Fatalf("relisted after the restart: %v", calls)
	}
	last := requests(src, "watch")
	if rv := last[len(last)-1].Options.ResourceVersion; rv != "3" {
		t.Fatalf("re-watched from %s, want the bookmark's RV 3", rv)
	}
	h.clk.noTimer(t)
	sink.checkModel(t, src)
}
