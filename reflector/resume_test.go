package reflector

import (
	"errors"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/fakesource"
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
	mustAdd(t, src, pod("d")) // 5
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

// TestResumeBehindServerSettles resumes from an RV the server has passed:
// the check changes nothing, the watch resumes with its settle timer.
func TestResumeBehindServerSettles(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b", "c") // RVs 2..4
	sink := newRecorder()
	sink.seed(src)
	mustAdd(t, src, pod("d")) // 5
	h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }})
	calls := sink.waitCall(t, "Add d@5")
	if want := []string{"MarkSynced", "Add d@5"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	if d := h.clk.nextTimer(t); d != DefaultResumeSettle {
		t.Fatalf("timer of %v, want the settle period %v", d, DefaultResumeSettle)
	}
	checkList(t, requests(src, "list")[0])
}

// TestResumeCheckFailureOrOff resumes unchecked when the check's LIST
// fails (logged) or ResumeCheck is off (no LIST at all): the watch resumes
// from the stored RV with its settle timer.
func TestResumeCheckFailureOrOff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		check     ResumeCheckPolicy
		fail      bool
		wantLists int
	}{
		{"list fails", ResumeCheckList, true, 1},
		{"off", ResumeCheckOff, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b", "c")
			if tc.fail {
				src.FailLists(1, errors.New("forbidden"))
			}
			sink := newRecorder()
			sink.seed(src)
			h := run(t, src, sink, Options{ResumeFrom: func() (string, bool) { return "4", true }, ResumeCheck: tc.check})
			if d := h.clk.nextTimer(t); d != DefaultResumeSettle {
				t.Fatalf("timer of %v, want the settle period %v", d, DefaultResumeSettle)
			}
			h.clk.Step(DefaultResumeSettle)
			sink.waitCall(t, "MarkSynced")
			if n := len(requests(src, "list")); n != tc.wantLists {
				t.Fatalf("%d LISTs, want %d", n, tc.wantLists)
			}
			if w := requests(src, "watch"); len(w) != 1 || w[0].Options.ResourceVersion != "4" {
				t.Fatalf("watches = %+v, want one from RV 4", w)
			}
		})
	}
}
