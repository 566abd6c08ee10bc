package reflector

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// noWatchListLW fails every WatchList (sendInitialEvents) request with
// err, as an aggregated API, a proxy or a custom source that cannot serve
// one does, and passes every other request on.
type noWatchListLW struct {
	cache.ListerWatcherWithContext
	err        error
	watchLists atomic.Int32
}

func (l *noWatchListLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		l.watchLists.Add(1)
		return nil, l.err
	}
	return l.ListerWatcherWithContext.WatchWithContext(ctx, opts)
}

// TestWatchListFailureFallsBackToList: a WatchList that fails, on the
// request or midway through its stream, for any reason but a refused
// connection or a 429 (TestWatchListRefusedIsRetried), is followed at
// once by a paginated LIST (as client-go's reflector does), so the Sink
// syncs without a backoff; the WatchList error is logged, not handled as
// a watch error. A relist that follows a later 410 tries WatchList again.
func TestWatchListFailureFallsBackToList(t *testing.T) {
	cases := []struct {
		name string
		// fault is injected into the first watch request, the WatchList.
		fault *fakesource.Fault
		// always, when set, fails every WatchList request with it.
		always error
		// before is what reaches the Sink before the LIST's replace.
		before []string
	}{
		{name: "500 on the request", fault: &fakesource.Fault{Err: fakesource.InternalError("aggregated API is unavailable")}},
		{name: "stream fails midway", fault: &fakesource.Fault{AfterEvents: 1, End: fakesource.EndDecodeError},
			before: []string{"BeginReplace", "ReplacePage a", "AbortReplace"}},
		{name: "stream closes before its end bookmark", fault: &fakesource.Fault{AfterEvents: 1, End: fakesource.EndClose},
			before: []string{"BeginReplace", "ReplacePage a", "AbortReplace"}},
		{name: "source never serves sendInitialEvents", always: errors.New("proxy: sendInitialEvents is not forwarded")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, "a", "b") // RV 3
			if tc.fault != nil {
				src.FailWatches(1, *tc.fault)
			}
			var lw cache.ListerWatcherWithContext = src.Endpoint(podGVK, "")
			var failing *noWatchListLW
			if tc.always != nil {
				failing = &noWatchListLW{ListerWatcherWithContext: lw, err: tc.always}
				lw = failing
			}
			rec := newRecorder()
			rec.strict = true
			var mu sync.Mutex
			var handled []error
			clk, _ := runWith(t, lw, abortingRecorder{rec}, Options{ListPageSize: 1,
				WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) {
					mu.Lock()
					defer mu.Unlock()
					handled = append(handled, err)
				}})
			want := append(append([]string(nil), tc.before...), "BeginReplace", "ReplacePage a", "ReplacePage b", "EndReplace 3")
			if calls := rec.waitCall(t, "EndReplace 3"); !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			// The live watch goes on from the LIST's RV.
			want = append(want, "Add c@"+mustAdd(t, src, testkit.Pod("c", "")))
			if calls := rec.waitCall(t, want[len(want)-1]); !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			clk.noTimer(t)
			rec.checkModel(t, src)
			mu.Lock()
			if len(handled) != 0 {
				t.Errorf("WatchErrorHandler got %v; a WatchList failure that the LIST recovers is only logged", handled)
			}
			mu.Unlock()
			watches := requests(src, "watch")
			if tc.always != nil {
				if n := failing.watchLists.Load(); n != 1 {
					t.Fatalf("%d WatchList requests, want 1", n)
				}
			} else if len(watches) == 0 || watches[0].Options.SendInitialEvents == nil {
				t.Fatalf("watch requests = %+v, want a WatchList first", watches)
			}
			if len(requests(src, "list")) == 0 {
				t.Fatal("no LIST request")
			}
			live := watches[len(watches)-1].Options
			if live.SendInitialEvents != nil || live.ResourceVersion != "3" {
				t.Fatalf("live watch options = %+v, want a plain watch from the LIST's RV", live)
			}
			if tc.always == nil {
				return
			}

			// The failure was not a refusal: after a 410, the relist
			// tries WatchList again, and falls back again.
			clk.Step(DefaultBackoffReset) // the 410 relists at once
			// A change of another kind moves the RV on (5) without a pod
			// event; the restarted server has no history before it, so the
			// rewatch from RV 4 gets 410.
			if _, err := src.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}); err != nil {
				t.Fatal(err)
			}
			src.Restart()
			want = append(want, "BeginReplace", "ReplacePage a", "ReplacePage b", "ReplacePage c", "EndReplace 5")
			if calls := rec.waitCall(t, "EndReplace 5"); !reflect.DeepEqual(calls, want) {
				t.Fatalf("sink calls = %v, want %v", calls, want)
			}
			if n := failing.watchLists.Load(); n != 2 {
				t.Fatalf("%d WatchList requests, want 2: a failure other than a refusal is not remembered", n)
			}
			clk.noTimer(t)
			rec.checkModel(t, src)
		})
	}
}

// TestWatchListRefusedIsRetried: a WatchList whose connection is refused
// is sent again after a backoff, as client-go's reflector does, not
// followed by a LIST (the server is away: a LIST at once would fail too).
// A 429 is retried the same way (clientgo_watchlist_test.go).
func TestWatchListRefusedIsRetried(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a", "b") // RV 3
	src.FailWatches(1, fakesource.Fault{Err: fakesource.ConnectionRefused()})
	rec := newRecorder()
	rec.strict = true
	clk, _ := runWith(t, src.Endpoint(podGVK, ""), abortingRecorder{rec}, Options{ListPageSize: 1})
	if d := clk.nextTimer(t); d != DefaultBackoff().Duration {
		t.Fatalf("backoff %v, want %v", d, DefaultBackoff().Duration)
	}
	clk.Step(DefaultBackoff().Duration)
	want := []string{"BeginReplace", "ReplacePage a", "ReplacePage b", "EndReplace 3"}
	if calls := rec.waitCall(t, "EndReplace 3"); !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	rec.checkModel(t, src)
	if n := len(requests(src, "list")); n != 0 {
		t.Errorf("%d LIST requests, want none", n)
	}
	watches := requests(src, "watch")
	if len(watches) != 2 || watches[0].Options.SendInitialEvents == nil || watches[1].Options.SendInitialEvents == nil {
		t.Errorf("watch requests = %+v, want two WatchLists", watches)
	}
}
