package reflector

import (
	"context"
	"reflect"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/fakesource"
)

func TestWarmStartWatchesWithoutListing(t *testing.T) {
	for _, policy := range []WatchListPolicy{WatchListAuto, WatchListOff} {
		t.Run("policy="+strconv.Itoa(int(policy)), func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b", "c") // RVs 2..4
			sink := newRecorder()
			sink.seed(src)
			mustUpdate(t, src, podL("a", "2")) // 5
			mustDelete(t, src, pod("b"))       // 6
			m := &countingMetrics{}
			h := run(t, src, sink, Options{
				ResumeFrom:   func() (string, bool) { return "4", true },
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
			if got := h.r.LastSyncResourceVersion(); got != "6" {
				t.Fatalf("LastSyncResourceVersion = %s, want 6", got)
			}
			sink.checkModel(t, src)
			h.clk.noTimer(t)
			if _, _, _, relists, resumes, _ := m.get(); relists != 0 || resumes != 1 {
				t.Fatalf("metrics relists=%d resumes=%d, want 0 and 1", relists, resumes)
			}
		})
	}
}

// TestWarmStartExpiredRelistsOnce resumes from a compacted RV: the
// reflector relists once, at once, not older than the stored RV.
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
			mustDelete(t, src, pod("a")) // 5
			if err := src.Compact("5"); err != nil {
				t.Fatal(err)
			}
			var handled []error
			h := run(t, src, sink, Options{
				ResumeFrom:   func() (string, bool) { return "4", true },
				UseWatchList: tc.policy,
				WatchErrorHandler: func(_ context.Context, r *cache.Reflector, err error) {
					if r.Name() != "*v1.Pod" {
						t.Errorf("handler got reflector %q", r.Name())
					}
					handled = append(handled, err)
				},
			})
			sink.waitCall(t, "EndReplace 5")
			mustAdd(t, src, pod("d"))
			calls := sink.waitCall(t, "Add d@6")
			want := []string{"BeginReplace", "ReplacePage b,c", "EndReplace 5", "Add d@6"}
			if !tc.expiredAsError {
				// The watch opened before its ERROR event arrived.
				want = append([]string{"MarkSynced"}, want...)
			}
			if !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
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
