package reflector

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// probeLW wraps a ListerWatcher: it can block List until the context is
// done, and counts Stop calls on the watches it returns.
type probeLW struct {
	cache.ListerWatcherWithContext
	blockList bool
	entered   chan struct{} // receives when a blocked List starts
	watches   atomic.Int32
	stops     atomic.Int32
}

func (p *probeLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if p.blockList {
		p.entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return p.ListerWatcherWithContext.ListWithContext(ctx, opts)
}

func (p *probeLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := p.ListerWatcherWithContext.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	p.watches.Add(1)
	return &stopCounter{Interface: w, stops: &p.stops}, nil
}

type stopCounter struct {
	watch.Interface
	once  sync.Once
	stops *atomic.Int32
}

func (s *stopCounter) Stop() {
	s.once.Do(func() { s.stops.Add(1) })
	s.Interface.Stop()
}

// abortingRecorder is a recorder that also implements ReplaceAborter.
type abortingRecorder struct{ *recorder }

func (a abortingRecorder) AbortReplace() error {
	return a.record(context.Background(), "AbortReplace", func() { a.staged = nil })
}

// runWith starts a reflector on lw instead of the source's endpoint.
func runWith(t *testing.T, lw cache.ListerWatcherWithContext, sink Sink, opts Options) (clk *notifyClock, stop func()) {
	t.Helper()
	clk = newClock()
	opts.Clock = clk
	opts.Backoff = noJitter()
	r, err := New(lw, &corev1.Pod{}, sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(testkit.Timeout()):
			t.Fatalf("Run did not return within %v of cancellation", testkit.Timeout())
		}
	}
	t.Cleanup(func() { cancel(); <-done })
	return clk, stop
}

func wait1(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testkit.Timeout()):
		t.Fatalf("not reached within %v", testkit.Timeout())
	}
}

func TestCancellation(t *testing.T) {
	cases := []struct {
		name string
		// setup prepares the source, lw and sink and returns when the
		// reflector has reached the state to cancel in.
		opts      Options
		mode      fakesource.WatchListMode
		blockList bool
		block     string // a sink call that blocks until ctx is done
		reach     func(t *testing.T, src *fakesource.Source, lw *probeLW, sink *recorder, clk *notifyClock)
		wantAbort bool
	}{
		{name: "during list", opts: Options{UseWatchList: WatchListOff}, blockList: true,
			reach: func(t *testing.T, _ *fakesource.Source, lw *probeLW, _ *recorder, _ *notifyClock) {
				wait1(t, lw.entered)
			}},
		{name: "during watch", reach: func(t *testing.T, src *fakesource.Source, _ *probeLW, sink *recorder, _ *notifyClock) {
			sink.waitCall(t, "EndReplace 2")
		}},
		{name: "during WatchList initial events", mode: fakesource.WatchListIgnored, opts: Options{ListPageSize: 1}, wantAbort: true,
			reach: func(t *testing.T, _ *fakesource.Source, _ *probeLW, sink *recorder, _ *notifyClock) {
				sink.waitCall(t, "ReplacePage a")
			}},
		{name: "during backoff", opts: Options{UseWatchList: WatchListOff},
			reach: func(t *testing.T, src *fakesource.Source, _ *probeLW, _ *recorder, clk *notifyClock) {
				clk.nextTimer(t)
			}},
		{name: "during a blocked sink", block: "ReplacePage a", wantAbort: true,
			reach: func(t *testing.T, _ *fakesource.Source, _ *probeLW, sink *recorder, _ *notifyClock) {
				sink.waitCall(t, "BeginReplace")
			}},
		{name: "during a blocked live event", block: "Add b@3",
			reach: func(t *testing.T, src *fakesource.Source, _ *probeLW, sink *recorder, _ *notifyClock) {
				sink.waitCall(t, "EndReplace 2")
				mustAdd(t, src, testkit.Pod("b", ""))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{WatchList: tc.mode}, "a")
			if tc.name == "during backoff" {
				src.FailLists(1, fakesource.ConnectionRefused())
			}
			lw := &probeLW{ListerWatcherWithContext: src.Endpoint(podGVK, ""), blockList: tc.blockList, entered: make(chan struct{}, 1)}
			rec := newRecorder()
			blocked := make(chan struct{})
			rec.hook = func(ctx context.Context, call string) error {
				if call == tc.block {
					close(blocked)
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			}
			clk, stop := runWith(t, lw, abortingRecorder{rec}, tc.opts)
			tc.reach(t, src, lw, rec, clk)
			if tc.block != "" {
				wait1(t, blocked)
			}
			before := src.Stats()
			stop()
			after := src.Stats()
			if after.Lists != before.Lists || after.Watches != before.Watches {
				t.Fatalf("requests after cancellation: before %+v, after %+v", before.Counts, after.Counts)
			}
			if after.OpenWatches != 0 {
				t.Fatalf("%d watches still open after Run returned", after.OpenWatches)
			}
			if n, s := lw.watches.Load(), lw.stops.Load(); n != s {
				t.Fatalf("%d watches opened, %d stopped", n, s)
			}
			calls := rec.snapshot()
			if aborted := len(calls) > 0 && calls[len(calls)-1] == "AbortReplace"; aborted != tc.wantAbort {
				t.Fatalf("sink calls = %v, want AbortReplace last: %v", calls, tc.wantAbort)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	src := newSource(t, fakesource.Options{})
	lw := src.Endpoint(podGVK, "")
	cases := []struct {
		name string
		lw   cache.ListerWatcherWithContext
		sink Sink
		opts Options
	}{
		{"nil lw", nil, newRecorder(), Options{}},
		{"nil sink", lw, nil, Options{}},
		{"negative page size", lw, newRecorder(), Options{ListPageSize: -1}},
		{"unknown policy", lw, newRecorder(), Options{UseWatchList: 7}},
		{"zero backoff", lw, newRecorder(), Options{Backoff: &wait.Backoff{}}},
		{"negative jitter", lw, newRecorder(), Options{Backoff: &wait.Backoff{Duration: time.Second, Jitter: -1}}},
		{"negative reset", lw, newRecorder(), Options{BackoffReset: -time.Second}},
		{"negative watch timeout", lw, newRecorder(), Options{MinWatchTimeout: -time.Second}},
		{"negative internal retry", lw, newRecorder(), Options{MaxInternalErrorRetryDuration: -time.Second}},
		{"negative resume settle", lw, newRecorder(), Options{ResumeSettle: -time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.lw, &corev1.Pod{}, tc.sink, tc.opts); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("New: %v, want ErrInvalidOptions", err)
			}
		})
	}
	r, err := New(lw, &corev1.Pod{}, newRecorder(), Options{Name: "pods"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "pods" || r.TypeDescription() != "*v1.Pod" || r.LastSyncResourceVersion() != "" {
		t.Fatalf("Name %q TypeDescription %q LastSyncResourceVersion %q", r.Name(), r.TypeDescription(), r.LastSyncResourceVersion())
	}
}

func TestRunTwiceReturnsAtOnce(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a")
	sink := newRecorder()
	h := run(t, src, sink, Options{})
	sink.waitCall(t, "EndReplace 2")
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.r.Run(context.Background())
	}()
	wait1(t, done)
	h.stop()
	if st := src.Stats(); st.Watches != 1 || st.Lists != 0 {
		t.Fatalf("second Run sent requests: %+v", st.Counts)
	}
}

// TestUnexpectedObjectsAreDropped: live events whose object has another
// GVK never reach the Sink (listed items are not checked, as in client-go).
func TestUnexpectedObjectsAreDropped(t *testing.T) {
	src := newSource(t, fakesource.Options{}, "a")
	sink := newRecorder()
	gvk := podGVK
	h := run(t, src, sink, Options{ExpectedGVK: &gvk, UseWatchList: WatchListOff})
	sink.waitCall(t, "EndReplace 2")
	// This pod carries no TypeMeta, so its GVK is empty.
	mustAdd(t, src, testkit.Pod("untyped", ""))
	typed := testkit.Pod("typed", "")
	typed.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	mustAdd(t, src, typed)
	calls := sink.waitCall(t, "Add typed@4")
	if count(calls, "Add untyped") != 0 {
		t.Fatalf("object with an unexpected GVK reached the sink: %v", calls)
	}
	if got := h.stoppedRV(); got != "4" {
		t.Fatalf("LastSyncResourceVersion = %s, want 4", got)
	}
}

func TestDropUnexpected(t *testing.T) {
	src := newSource(t, fakesource.Options{})
	r, err := New(src.Endpoint(podGVK, ""), &corev1.ConfigMap{}, newRecorder(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	table := &unstructured.Unstructured{}
	table.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Table"))
	untyped, err := New(src.Endpoint(podGVK, ""), nil, newRecorder(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		r    *Reflector
		obj  runtime.Object
		drop bool
	}{
		{"expected type", r, &corev1.ConfigMap{}, false},
		{"other type", r, &corev1.Pod{}, true},
		{"nil object", r, nil, true},
		{"no expected type", untyped, &corev1.Pod{}, false},
		{"table", untyped, table, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.dropUnexpected(context.Background(), tc.obj); got != tc.drop {
				t.Fatalf("dropUnexpected = %v, want %v", got, tc.drop)
			}
		})
	}
}
