package reflector

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestWarmStartWatchesWithoutListing(t *testing.T) {
	for _, policy := range []WatchListPolicy{WatchListAuto, WatchListOff} {
		t.Run("policy="+strconv.Itoa(int(policy)), func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b", "c") // RVs 2..4
			sink := newRecorder()
			sink.seed(src)
			mustUpdate(t, src, podL("a", "2"))       // 5
			mustDelete(t, src, testkit.Pod("b", "")) // 6
			m := &countingMetrics{}
			h := run(t, src, sink, Options{
				ResumeFrom:   func() (string, bool) { return "4", true },
				ResumeCheck:  ResumeCheckOff, // the resume mechanism itself; see resume_test.go
				Metrics:      m,
				UseWatchList: policy,
			})
			calls := sink.waitCall(t, "Delete b@6")
			if want := []string{"MarkSynced", "Update a@5", "Delete b@6"}; !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			st := src.Stats()
			if st.Lists != 0 || st.Watches != 1 || st.WatchLists != 0 {
				t.Fatalf("requests = %+v, want exactly one plain watch", st.Counts)
			}
			w := requests(src, "watch")[0].Options
			if w.ResourceVersion != "4" || !w.AllowWatchBookmarks || w.SendInitialEvents != nil || w.ResourceVersionMatch != "" {
				t.Fatalf("watch options = %+v, want RV 4 with bookmarks", w)
			}
			if got := h.stoppedRV(); got != "6" {
				t.Fatalf("LastSyncResourceVersion = %s, want 6", got)
			}
			sink.checkModel(t, src)
			// The settle timer of the resumed watch; the clock never moved,
			// so the first event pushed MarkSynced.
			if d := h.clk.nextTimer(t); d != DefaultResumeSettle {
				t.Fatalf("timer of %v, want the settle period %v", d, DefaultResumeSettle)
			}
			h.clk.noTimer(t)
			if _, _, _, relists, resumes, _ := m.get(); relists != 0 || resumes != 1 {
				t.Fatalf("metrics relists=%d resumes=%d, want 0 and 1", relists, resumes)
			}
		})
	}
}

// TestWarmStartExpiredRelistsOnce resumes from a compacted RV: the
// reflector relists once, at once, not older than the stored RV. It
// pushes no MarkSynced, whether the server refuses the watch or, as
// kube-apiserver does, opens it and sends a 410 ERROR event at once: the
// stored state is stale, and only the relist's EndReplace syncs.
func TestWarmStartExpiredRelistsOnce(t *testing.T) {
	cases := []struct {
		name           string
		expiredAsError bool
		policy         WatchListPolicy
	}{
		{"expired event, WatchList", false, WatchListAuto},
		{"expired event, LIST", false, WatchListOff},
		{"expired error, WatchList", true, WatchListAuto},
		{"expired error, LIST", true, WatchListOff},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{ExpiredAsError: tc.expiredAsError}, "a", "b", "c")
			sink := newRecorder()
			sink.seed(src)
			mustDelete(t, src, testkit.Pod("a", "")) // 5
			if err := src.Compact("5"); err != nil {
				t.Fatal(err)
			}
			var handled []error
			h := run(t, src, sink, Options{
				ResumeFrom:   func() (string, bool) { return "4", true },
				ResumeCheck:  ResumeCheckOff, // the resume mechanism itself; see resume_test.go
				UseWatchList: tc.policy,
				WatchErrorHandler: func(_ context.Context, r *cache.Reflector, err error) {
					if r.Name() != "*v1.Pod" {
						t.Errorf("handler got reflector %q", r.Name())
					}
					handled = append(handled, err)
				},
			})
			sink.waitCall(t, "EndReplace 5")
			mustAdd(t, src, testkit.Pod("d", ""))
			calls := sink.waitCall(t, "Add d@6")
			want := []string{"BeginReplace", "ReplacePage b,c", "EndReplace 5", "Add d@6"}
			if !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			if !tc.expiredAsError {
				// The watch opened, armed its settle timer, and its ERROR
				// event arrived before the (never stepped) clock reached it.
				if d := h.clk.nextTimer(t); d != DefaultResumeSettle {
					t.Fatalf("timer of %v, want the settle period %v", d, DefaultResumeSettle)
				}
			}
			h.clk.noTimer(t)
			sink.checkModel(t, src)
			if len(handled) != 1 || !isExpired(handled[0]) {
				t.Fatalf("handled errors = %v, want one 410", handled)
			}
			// The relist asked for a state not older than the stored RV.
			var relist metav1.ListOptions
			if tc.policy == WatchListAuto {
				relist = requests(src, "watch")[1].Options
			} else {
				relist = requests(src, "list")[0].Options
			}
			if relist.ResourceVersion != "4" || relist.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
				t.Fatalf("relist options = %+v, want RV 4 NotOlderThan", relist)
			}
		})
	}
}

func TestResumeFromIncompleteOrEmptyState(t *testing.T) {
	cases := []struct {
		name     string
		rv       string
		complete bool
		wantRV   string
		wantRVM  metav1.ResourceVersionMatch
	}{
		{"incomplete relists not older than the RV", "3", false, "3", metav1.ResourceVersionMatchNotOlderThan},
		{"complete but empty is a cold start", "", true, "0", ""},
		{"RV 0 is a cold start", "0", true, "0", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b")
			sink := newRecorder()
			run(t, src, sink, Options{
				ResumeFrom:   func() (string, bool) { return tc.rv, tc.complete },
				UseWatchList: WatchListOff,
			})
			calls := sink.waitCall(t, "EndReplace 3")
			if count(calls, "MarkSynced") != 0 {
				t.Fatalf("MarkSynced pushed for a cold start: %v", calls)
			}
			l := requests(src, "list")[0].Options
			if l.ResourceVersion != tc.wantRV || l.ResourceVersionMatch != tc.wantRVM {
				t.Fatalf("list options = %+v, want RV %q match %q", l, tc.wantRV, tc.wantRVM)
			}
			sink.checkModel(t, src)
		})
	}
}

// TestWarmStartSyncsOnceTheWatchResumed: on a warm start, MarkSynced waits
// for the resumed watch to prove the stored RV good, by an event or by
// staying open Options.ResumeSettle without an ERROR event.
func TestWarmStartSyncsOnceTheWatchResumed(t *testing.T) {
	const settle = 3 * time.Second
	cases := []struct {
		name string
		// prove makes the open, quiet watch show it resumed and returns
		// the sink call expected right after MarkSynced.
		prove func(t *testing.T, h *harness) string
	}{
		{"first event", func(t *testing.T, h *harness) string {
			return "Add " + "d@" + mustAdd(t, h.src, testkit.Pod("d", ""))
		}},
		{"first bookmark", func(t *testing.T, h *harness) string {
			if n := h.src.SendBookmark(); n != 1 {
				t.Fatalf("bookmark sent to %d watches, want 1", n)
			}
			return "Bookmark 4"
		}},
		{"settle period without error", func(t *testing.T, h *harness) string {
			h.clk.Step(settle)
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b", "c") // RV 4
			sink := newRecorder()
			sink.seed(src)
			h := run(t, src, sink, Options{
				ResumeFrom:   func() (string, bool) { return "4", true },
				ResumeCheck:  ResumeCheckOff, // the resume mechanism itself; see resume_test.go
				ResumeSettle: settle,
			})
			// The settle timer is armed once the watch is open.
			if d := h.clk.nextTimer(t); d != settle {
				t.Fatalf("timer of %v, want the settle period %v", d, settle)
			}
			if calls := sink.snapshot(); len(calls) != 0 {
				t.Fatalf("sink calls before the watch showed it resumed: %v", calls)
			}
			want := []string{"MarkSynced"}
			if next := tc.prove(t, h); next != "" {
				want = append(want, next)
			}
			if calls := sink.waitCall(t, want[len(want)-1]); !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			// Neither the settle timer nor later events push it again.
			h.clk.Step(settle)
			want = append(want, "Add e@"+mustAdd(t, src, testkit.Pod("e", "")))
			if calls := sink.waitCall(t, want[len(want)-1]); !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			h.clk.noTimer(t)
			sink.checkModel(t, src)
			if st := src.Stats(); st.Lists != 0 || st.WatchLists != 0 || st.Watches != 1 {
				t.Fatalf("requests = %+v, want one watch", st.Counts)
			}
		})
	}
}

// TestWarmStartRewatchKeepsSyncPending: a resumed watch that ends before
// it showed it resumed (a clean close, or a transient ERROR event other
// than 410) pushes no MarkSynced; the next watch from the same RV does,
// after a settle period of its own.
func TestWarmStartRewatchKeepsSyncPending(t *testing.T) {
	// Shorter than the backoff between the two watches: a settle period
	// carried over from the first watch would end before the second one's.
	const settle = 500 * time.Millisecond
	const backoff = 800 * time.Millisecond
	cases := []struct {
		name  string
		fault fakesource.Fault
		opts  Options
		// handled checks the error handled before the second watch.
		handled func(error) bool
	}{
		{"closed cleanly", fakesource.Fault{End: fakesource.EndClose}, Options{},
			func(err error) bool { return strings.Contains(err.Error(), "very short watch") }},
		{"500 ERROR event", fakesource.Fault{End: fakesource.EndDecodeError},
			Options{MaxInternalErrorRetryDuration: time.Minute}, apierrors.IsInternalError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b", "c") // RV 4
			src.FailWatches(1, tc.fault)
			sink := newRecorder()
			sink.seed(src)
			var mu sync.Mutex
			var handled []error
			opts := tc.opts
			opts.ResumeFrom = func() (string, bool) { return "4", true }
			opts.ResumeCheck = ResumeCheckOff // the settle timer itself; see resume_test.go
			opts.ResumeSettle = settle
			opts.UseWatchList = WatchListOff
			opts.WatchErrorHandler = func(_ context.Context, _ *cache.Reflector, err error) {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, err)
			}
			h := run(t, src, sink, opts)
			for i, want := range []time.Duration{settle, backoff} {
				if d := h.clk.nextTimer(t); d != want {
					t.Fatalf("timer %d of %v, want %v", i, d, want)
				}
			}
			if calls := sink.snapshot(); len(calls) != 0 {
				t.Fatalf("sink calls after the first watch ended: %v", calls)
			}
			h.clk.Step(backoff)
			if d := h.clk.nextTimer(t); d != settle {
				t.Fatalf("second watch armed a timer of %v, want the settle period %v", d, settle)
			}
			if calls := sink.snapshot(); len(calls) != 0 {
				t.Fatalf("sink calls before the second watch settled: %v", calls)
			}
			h.clk.Step(settle)
			sink.waitCall(t, "MarkSynced")
			want := []string{"MarkSynced", "Add d@" + mustAdd(t, src, testkit.Pod("d", ""))}
			if calls := sink.waitCall(t, want[1]); !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			h.clk.noTimer(t)
			sink.checkModel(t, src)
			watches := requests(src, "watch")
			if st := src.Stats(); st.Lists != 0 || len(watches) != 2 ||
				watches[0].Options.ResourceVersion != "4" || watches[1].Options.ResourceVersion != "4" {
				t.Fatalf("requests = %+v, want two watches from RV 4 and no list", src.Requests())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(handled) != 1 || !tc.handled(handled[0]) {
				t.Fatalf("handled errors = %v, want one %s", handled, tc.name)
			}
		})
	}
}

// expiredResumeLW answers the watch from the persisted RV with a watch
// whose 410 ERROR event is already waiting, and passes every other
// request on.
type expiredResumeLW struct {
	cache.ListerWatcherWithContext
	rv string
}

func (l expiredResumeLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil || opts.ResourceVersion != l.rv {
		return l.ListerWatcherWithContext.WatchWithContext(ctx, opts)
	}
	w := watch.NewFakeWithChanSize(1, false)
	st := apierrors.NewResourceExpired("too old resource version").Status()
	w.Error(&st)
	return w, nil
}

// elapsedClock is a fake clock on which every timer has fired by the time
// NewTimer returns.
type elapsedClock struct{ *testingclock.FakeClock }

func (c elapsedClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.Step(d)
	return t
}

// TestWarmStartExpiredEventBeatsSettle: when the settle period of the
// resumed watch ends while its 410 ERROR event is already waiting, the
// 410 wins: no MarkSynced, and the relist's EndReplace completes the
// sync. Both channels are ready when the reflector first waits, so a
// plain select would push MarkSynced half the time; every round must
// relist without it.
func TestWarmStartExpiredEventBeatsSettle(t *testing.T) {
	for round := range 20 {
		src := newSource(t, fakesource.Options{}, "a", "b") // RV 3
		sink := newRecorder()
		sink.seed(src)
		mustAdd(t, src, testkit.Pod("c", "")) // 4
		clk := elapsedClock{testingclock.NewFakeClock(time.Unix(10000, 0))}
		r, err := New(expiredResumeLW{src.Endpoint(podGVK, ""), "3"}, &corev1.Pod{}, sink, Options{
			ResumeFrom:        func() (string, bool) { return "3", true },
			UseWatchList:      WatchListOff,
			Clock:             clk,
			WatchErrorHandler: func(context.Context, *cache.Reflector, error) {},
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
		calls := sink.waitCall(t, "EndReplace 4")
		cancel()
		<-done
		if want := []string{"BeginReplace", "ReplacePage a,b,c", "EndReplace 4"}; !reflect.DeepEqual(calls, want) {
			t.Fatalf("round %d: sink calls = %v, want %v: MarkSynced before the 410 that was waiting", round, calls, want)
		}
	}
}
