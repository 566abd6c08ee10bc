package reflector

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestColdStartWatchList(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b", "c", "d", "e") // RV 6
	sink := newRecorder()
	m := &countingMetrics{}
	h := run(t, src, sink, Options{ListPageSize: 2, Metrics: m})
	sink.waitCall(t, "EndReplace 6")
	mustAdd(t, src, testkit.Pod("f", ""))
	calls := sink.waitCall(t, "Add f@7")
	want := []string{"BeginReplace", "ReplacePage a,b", "ReplacePage c,d", "ReplacePage e", "EndReplace 6", "Add f@7"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	st := src.Stats()
	if st.Lists != 0 || st.Watches != 1 || st.WatchLists != 1 {
		t.Fatalf("requests = %+v, want one WatchList reused as the live watch", st.Counts)
	}
	o := requests(src, "watch")[0].Options
	if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersion != "" ||
		o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !o.AllowWatchBookmarks || o.TimeoutSeconds == nil {
		t.Fatalf("watch-list options = %+v", o)
	}
	if got := h.stoppedRV(); got != "7" {
		t.Fatalf("LastSyncResourceVersion = %s, want 7", got)
	}
	sink.checkModel(t, src)
	if lists, watches, watchLists, relists, _, _ := m.get(); lists != 0 || watches != 1 || watchLists != 1 || relists != 1 {
		t.Fatalf("metrics lists=%d watches=%d watchLists=%d relists=%d", lists, watches, watchLists, relists)
	}
}

// TestColdStartPaginatedList checks the LIST fallback: pages streamed to
// the Sink one at a time (each pushed before the next is requested), the
// first at RV "0", then a watch from the list's RV.
func TestColdStartPaginatedList(t *testing.T) {
	cases := []struct {
		name           string
		policy         WatchListPolicy
		mode           fakesource.WatchListMode
		wantWatchLists int
	}{
		{"WatchList off", WatchListOff, fakesource.WatchListSupported, 0},
		{"server rejects WatchList", WatchListAuto, fakesource.WatchListRejected, 1},
		{"client does not support WatchList", WatchListAuto, fakesource.WatchListClientUnsupported, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{DisableWatchCache: true, WatchList: tc.mode}, "a", "b", "c", "d", "e", "f", "g") // RV 8
			sink := newRecorder()
			var mu sync.Mutex
			var listsAtPage []int
			sink.hook = func(_ context.Context, call string) error {
				if strings.HasPrefix(call, "ReplacePage") {
					mu.Lock()
					listsAtPage = append(listsAtPage, src.Stats().Lists)
					mu.Unlock()
				}
				return nil
			}
			run(t, src, sink, Options{ListPageSize: 3, UseWatchList: tc.policy})
			sink.waitCall(t, "EndReplace 8")
			mustDelete(t, src, testkit.Pod("a", ""))
			calls := sink.waitCall(t, "Delete a@9")
			want := []string{"BeginReplace", "ReplacePage a,b,c", "ReplacePage d,e,f", "ReplacePage g", "EndReplace 8", "Delete a@9"}
			if !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			mu.Lock()
			if !reflect.DeepEqual(listsAtPage, []int{1, 2, 3}) {
				t.Fatalf("LIST requests sent when each page reached the sink = %v, want [1 2 3]", listsAtPage)
			}
			mu.Unlock()
			lists := requests(src, "list")
			if len(lists) != 3 {
				t.Fatalf("%d LIST requests, want 3", len(lists))
			}
			if o := lists[0].Options; o.ResourceVersion != "0" || o.Limit != 3 || o.Continue != "" || o.ResourceVersionMatch != "" {
				t.Fatalf("first list options = %+v, want RV 0 limit 3", o)
			}
			for _, l := range lists[1:] {
				if o := l.Options; o.ResourceVersion != "" || o.Continue == "" || o.Limit != 3 {
					t.Fatalf("continue options = %+v", o)
				}
			}
			if st := src.Stats(); st.WatchLists != tc.wantWatchLists || st.Watches != tc.wantWatchLists+1 {
				t.Fatalf("watches = %+v, want %d WatchList attempts and one live watch", st.Counts, tc.wantWatchLists)
			}
			live := requests(src, "watch")[tc.wantWatchLists].Options
			if live.ResourceVersion != "8" || !live.AllowWatchBookmarks || live.SendInitialEvents != nil {
				t.Fatalf("live watch options = %+v, want RV 8 with bookmarks", live)
			}
			sink.checkModel(t, src)
		})
	}
}

// TestWatchListIgnoredFallsBack runs against a server that ignores
// sendInitialEvents: the reflector streams its legacy ADDED events as a
// replace until the first plain bookmark shows the server does not
// support WatchList, then relists with LIST (one unpaginated RV "0"
// answer, pushed in pages of ListPageSize).
func TestWatchListIgnoredFallsBack(t *testing.T) {
	src := newSource(t, fakesource.Options{WatchList: fakesource.WatchListIgnored}, "a", "b", "c", "d", "e")
	sink := newRecorder()
	run(t, src, sink, Options{ListPageSize: 2})
	sink.waitCall(t, "ReplacePage c,d")
	if n := src.SendBookmark(); n != 1 {
		t.Fatalf("SendBookmark reached %d watches, want 1", n)
	}
	calls := sink.waitCall(t, "EndReplace 6")
	want := []string{"BeginReplace", "ReplacePage a,b", "ReplacePage c,d", "BeginReplace", "ReplacePage a,b", "ReplacePage c,d", "ReplacePage e", "EndReplace 6"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	mustAdd(t, src, testkit.Pod("f", ""))
	sink.waitCall(t, "Add f@7")
	sink.checkModel(t, src)
}

// TestExpiredContinueRestartsRelist compacts the source between two pages:
// the continue token expires and the reflector restarts the relist with a
// new BeginReplace at the most recent state.
func TestExpiredContinueRestartsRelist(t *testing.T) {
	src := newSource(t, fakesource.Options{DisableWatchCache: true}, "a", "b", "c", "d", "e", "f", "g") // RV 8
	sink := newRecorder()
	var once sync.Once
	sink.hook = func(_ context.Context, call string) error {
		if strings.HasPrefix(call, "ReplacePage") {
			once.Do(func() {
				if _, err := src.Add(testkit.Pod("h", "")); err != nil {
					t.Error(err)
				}
				if err := src.Compact(src.ResourceVersion()); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	}
	m := &countingMetrics{}
	h := run(t, src, sink, Options{ListPageSize: 3, UseWatchList: WatchListOff, Metrics: m})
	calls := sink.waitCall(t, "EndReplace 9")
	want := []string{"BeginReplace", "ReplacePage a,b,c", "BeginReplace", "ReplacePage a,b,c", "ReplacePage d,e,f", "ReplacePage g,h", "EndReplace 9"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	lists := requests(src, "list")
	if len(lists) != 5 {
		t.Fatalf("%d LIST requests, want 5", len(lists))
	}
	if o := lists[2].Options; o.ResourceVersion != "" || o.Continue != "" || o.ResourceVersionMatch != "" {
		t.Fatalf("restarted list options = %+v, want the most recent state (RV \"\")", o)
	}
	h.clk.noTimer(t)
	mustAdd(t, src, testkit.Pod("i", ""))
	sink.waitCall(t, "Add i@10")
	sink.checkModel(t, src)
	if _, _, _, relists, _, expired := m.get(); relists != 1 || expired != 1 {
		t.Fatalf("metrics relists=%d expired=%d, want 1 and 1", relists, expired)
	}
}

// TestListErrorMidwayAbortsAndRestarts fails the second page of a list:
// the reflector aborts the open replace (the Sink implements
// ReplaceAborter), backs off and relists from scratch.
func TestListErrorMidwayAbortsAndRestarts(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b", "c") // RV 4
	rec := newRecorder()
	var once sync.Once
	rec.hook = func(_ context.Context, call string) error {
		if strings.HasPrefix(call, "ReplacePage") {
			once.Do(func() { src.FailLists(1, fakesource.InternalError("etcd timeout")) })
		}
		return nil
	}
	clk, _ := runWith(t, src.Endpoint(podGVK, ""), abortingRecorder{rec}, Options{ListPageSize: 2, UseWatchList: WatchListOff, ResumeFrom: func() (string, bool) { return "4", false }})
	if d := clk.nextTimer(t); d != 800*time.Millisecond {
		t.Fatalf("backoff %v, want 800ms", d)
	}
	clk.Step(800 * time.Millisecond)
	calls := rec.waitCall(t, "EndReplace 4")
	want := []string{"BeginReplace", "ReplacePage a,b", "AbortReplace", "BeginReplace", "ReplacePage a,b", "ReplacePage c", "EndReplace 4"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	rec.checkModel(t, src)
}
