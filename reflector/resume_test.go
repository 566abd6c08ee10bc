package reflector

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// checkList fails unless list is the resume check: a consistent LIST of
// at most one object.
func checkList(t *testing.T, list fakesource.Request) {
	t.Helper()
	if o := list.Options; o.ResourceVersion != "" || o.Limit != 1 || o.ResourceVersionMatch != "" || o.Continue != "" {
		t.Fatalf("first LIST options = %+v, want the resume check (RV \"\", limit 1)", o)
	}
}

// TestResumeAheadOfServerRelists resumes from an RV the server has not
// reached, as after the cluster was recreated or its etcd restored from an
// older backup: the reflector never watches from it and pushes no
// MarkSynced; it relists the most recent state (RV "", not "not older than
// the stored RV", which would wait for the server to reach it).
func TestResumeAheadOfServerRelists(t *testing.T) {
	for _, policy := range []WatchListPolicy{WatchListAuto, WatchListOff} {
		t.Run([]string{"WatchList", "LIST"}[policy], func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b", "c") // RVs 2..4
			sink := newRecorder()
			sink.seed(src) // the stored state: a, b, c
			m := &countingMetrics{}
			run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4822", true }, UseWatchList: policy, Metrics: m})
			calls := sink.waitCall(t, "EndReplace 4")
			if want := []string{"BeginReplace", "ReplacePage a,b,c", "EndReplace 4"}; !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			lists := requests(src, "list")
			checkList(t, lists[0])
			for _, w := range requests(src, "watch") {
				if w.Options.ResourceVersion == "4822" {
					t.Fatalf("watched from the stored RV ahead of the server: %+v", w.Options)
				}
			}
			var relist metav1.ListOptions
			if policy == WatchListAuto {
				relist = requests(src, "watch")[0].Options
			} else {
				relist = lists[1].Options
			}
			if relist.ResourceVersion != "" {
				t.Fatalf("relist options = %+v, want the most recent state (RV \"\")", relist)
			}
			if _, _, _, relists, resumes, _ := m.get(); relists != 1 || resumes != 0 {
				t.Fatalf("metrics relists=%d resumes=%d, want 1 and 0", relists, resumes)
			}
			sink.checkModel(t, src)
		})
	}
}

// TestResumeAtServerRVSyncsAtOnce resumes from the server's current RV:
// nothing can be pending, so MarkSynced is pushed as soon as the watch is
// open, with no settle timer at all (the fake clock never moves).
func TestResumeAtServerRVSyncsAtOnce(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b", "c") // RVs 2..4
	sink := newRecorder()
	sink.seed(src)
	h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }})
	sink.waitCall(t, "MarkSynced")
	h.clk.noTimer(t)
	mustAdd(t, src, testkit.Pod("d", "")) // 5
	calls := sink.waitCall(t, "Add d@5")
	if want := []string{"MarkSynced", "Add d@5"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	h.clk.noTimer(t)
	lists, watches := requests(src, "list"), requests(src, "watch")
	if len(lists) != 1 || len(watches) != 1 {
		t.Fatalf("%d LISTs and %d watches, want the check and one watch", len(lists), len(watches))
	}
	checkList(t, lists[0])
	if o := watches[0].Options; o.ResourceVersion != "4" || !o.AllowWatchBookmarks || o.SendInitialEvents != nil {
		t.Fatalf("watch options = %+v, want RV 4 with bookmarks", o)
	}
}

// TestResumeBehindServerCatchesUp resumes from an RV the server has
// passed: the watch resumes, and MarkSynced waits for it to deliver the
// server's RV read by the check (catchup_test.go), with no settle timer.
func TestResumeBehindServerCatchesUp(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b", "c") // RVs 2..4
	sink := newRecorder()
	sink.seed(src)
	mustAdd(t, src, testkit.Pod("d", "")) // 5
	h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }})
	calls := sink.waitCall(t, "MarkSynced")
	if want := []string{"Add d@5", "MarkSynced"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	h.clk.noBackoff(t, catchUpQuiet)
	checkList(t, requests(src, "list")[0])
}

// TestResumeCheckOff resumes without asking the server (no LIST at all):
// the watch resumes from the stored RV with its settle timer.
func TestResumeCheckOff(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b", "c")
	sink := newRecorder()
	sink.seed(src)
	h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }, ResumeCheck: ResumeCheckOff})
	if d := h.clk.nextTimer(t); d != DefaultResumeSettle {
		t.Fatalf("timer of %v, want the settle period %v", d, DefaultResumeSettle)
	}
	h.clk.Step(DefaultResumeSettle)
	sink.waitCall(t, "MarkSynced")
	if n := len(requests(src, "list")); n != 0 {
		t.Fatalf("%d LISTs, want none", n)
	}
	if w := requests(src, "watch"); len(w) != 1 || w[0].Options.ResourceVersion != "4" {
		t.Fatalf("watches = %+v, want one from RV 4", w)
	}
}

// decisions records OnResumeDecided calls.
type decisions chan bool

func (d decisions) record(ahead bool) { d <- ahead }

// none fails the test if a decision was recorded.
func (d decisions) none(t *testing.T, when string) {
	t.Helper()
	select {
	case ahead := <-d:
		t.Fatalf("OnResumeDecided(%v) %s, before the resume check succeeded", ahead, when)
	default:
	}
}

// await returns the next decision.
func (d decisions) await(t *testing.T) bool {
	t.Helper()
	select {
	case ahead := <-d:
		return ahead
	case <-time.After(testkit.Timeout()):
		t.Fatalf("OnResumeDecided not called within %v", testkit.Timeout())
	}
	return false
}

// errorLog records the errors passed to a WatchErrorHandler.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) handle(_ context.Context, _ *cache.Reflector, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) get() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// checkFaults fail the resume check's LIST in turn; wantWaits are the
// waits before each retry: the backoff without jitter (800ms doubling),
// and the 429's Retry-After when longer.
var (
	checkFaults = []error{
		fakesource.ConnectionRefused(),
		apierrors.NewServiceUnavailable("apiserver is shutting down"),
		apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: access denied")),
		fakesource.TooManyRequests(20),
		apierrors.NewTimeoutError("request timed out", 0),
	}
	wantWaits = []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 20 * time.Second, 12800 * time.Millisecond}
)

// failChecks makes the next LISTs fail with checkFaults.
func failChecks(src *fakesource.Source) {
	for _, err := range checkFaults {
		src.FailLists(1, err)
	}
}

// TestResumeCheckFailuresAreRetried (invariant 7): a resume check whose
// LIST fails decides nothing and pushes nothing; it is retried on the
// reflector's backoff, each error passed to the WatchErrorHandler, until
// the server answers. Resuming unchecked would watch from a stored RV the
// server may not have reached, which kube-apiserver accepts and then
// stays silent on, and the stored state would be served as current. Once
// the check succeeds, a stored RV behind the server's resumes (no relist),
// and one ahead of it relists the most recent state.
func TestResumeCheckFailuresAreRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		storedRV  string
		wantAhead bool
		wantCalls []string
	}{
		{"server behind the stored RV resumes", "4", false, []string{"Add d@5", "MarkSynced"}},
		{"stored RV ahead of the server relists", "4822", true, []string{"BeginReplace", "ReplacePage a,b,c,d", "EndReplace 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b", "c") // RVs 2..4
			sink := newRecorder()
			sink.seed(src)
			mustAdd(t, src, testkit.Pod("d", "")) // 5: the server moved on
			failChecks(src)
			decided := make(decisions, 2)
			errs := &errorLog{}
			m := &countingMetrics{}
			h := run(t, src, sink, Options{
				ResumeFrom:        func() (string, bool) { return tc.storedRV, true },
				OnResumeDecided:   decided.record,
				WatchErrorHandler: errs.handle,
				UseWatchList:      WatchListOff,
				Metrics:           m,
			})
			for i, want := range wantWaits {
				if d := h.clk.nextTimer(t); d != want {
					t.Fatalf("wait %d after a failed check of %v, want %v", i+1, d, want)
				}
				decided.none(t, "while the check fails")
				if calls := sink.snapshot(); len(calls) != 0 {
					t.Fatalf("sink calls %v while the check fails, want none", calls)
				}
				if w := requests(src, "watch"); len(w) != 0 {
					t.Fatalf("watches %+v while the check fails, want none", w)
				}
				h.clk.Step(want)
			}
			if ahead := decided.await(t); ahead != tc.wantAhead {
				t.Fatalf("OnResumeDecided(%v), want %v", ahead, tc.wantAhead)
			}
			calls := sink.waitCall(t, tc.wantCalls[len(tc.wantCalls)-1])
			if !reflect.DeepEqual(calls, tc.wantCalls) {
				t.Fatalf("sink calls = %v, want %v", calls, tc.wantCalls)
			}
			sink.checkModel(t, src)
			rv := h.stoppedRV()
			if rv != "5" {
				t.Fatalf("LastSyncResourceVersion %q, want 5", rv)
			}
			decided.none(t, "a second time")
			lists := requests(src, "list")
			for _, l := range lists[:len(checkFaults)+1] {
				checkList(t, l)
			}
			wantLists := len(checkFaults) + 1 // the failed checks and the one that succeeded
			if tc.wantAhead {
				wantLists++ // the relist
				if o := lists[len(lists)-1].Options; o.ResourceVersion != "" || o.Limit != DefaultListPageSize {
					t.Fatalf("relist options %+v, want the most recent state (RV \"\")", o)
				}
			}
			if len(lists) != wantLists {
				t.Fatalf("%d LISTs, want %d", len(lists), wantLists)
			}
			watches := requests(src, "watch")
			if !tc.wantAhead && (len(watches) != 1 || watches[0].Options.ResourceVersion != tc.storedRV) {
				t.Fatalf("watches %+v, want one from the stored RV %s", watches, tc.storedRV)
			}
			for _, w := range watches {
				if w.Options.ResourceVersion == "4822" {
					t.Fatalf("watched from the stored RV ahead of the server: %+v", w.Options)
				}
			}
			got := errs.get()
			if len(got) != len(checkFaults) {
				t.Fatalf("WatchErrorHandler got %d errors %v, want the %d failed checks", len(got), got, len(checkFaults))
			}
			for i, err := range got {
				if !errors.Is(err, checkFaults[i]) {
					t.Fatalf("WatchErrorHandler error %d = %v, want it to wrap %v", i, err, checkFaults[i])
				}
			}
			lc, _, _, relists, resumes, _ := m.get()
			wantRelists, wantResumes := 0, 1
			if tc.wantAhead {
				wantRelists, wantResumes = 1, 0
			}
			if lc != wantLists || relists != wantRelists || resumes != wantResumes {
				t.Fatalf("metrics lists=%d relists=%d resumes=%d, want %d, %d and %d", lc, relists, resumes, wantLists, wantRelists, wantResumes)
			}
		})
	}
}

// TestResumeCheckCancelledWhileRetrying: Run's context ends while a
// failed resume check waits to retry: Run returns at once (the fake clock
// never moves, so only the cancellation can end the wait), without a
// decision and without pushing or watching anything.
func TestResumeCheckCancelledWhileRetrying(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b", "c")
	src.FailLists(100, fakesource.ConnectionRefused())
	sink := newRecorder()
	sink.seed(src)
	decided := make(decisions, 1)
	h := run(t, src, sink, Options{
		ResumeFrom:      func() (string, bool) { return "4822", true },
		OnResumeDecided: decided.record,
	})
	h.clk.nextTimer(t)
	h.clk.Step(800 * time.Millisecond)
	h.clk.nextTimer(t) // waiting after the second failure
	h.stop()           // fails the test unless Run returns
	decided.none(t, "after cancellation")
	if calls := sink.snapshot(); len(calls) != 0 {
		t.Fatalf("sink calls %v, want none", calls)
	}
	if n, w := len(requests(src, "list")), requests(src, "watch"); n != 2 || len(w) != 0 {
		t.Fatalf("%d LISTs and watches %+v, want the 2 failed checks and no watch", n, w)
	}
}
