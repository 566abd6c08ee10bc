package reflector

// Helpers of the client-go conformance tests (clientgo_*_test.go), which
// port client-go's tools/cache/reflector_test.go and
// reflector_watchlist_test.go at v0.36.3. They keep client-go's fake
// ListerWatcher pattern (a cache.ListWatch whose functions script the
// server, watch.FakeWatcher for watches) and add what our Run needs:
//
//   - client-go calls ListAndWatch, which returns when the watch ends or
//     its context is cancelled, and calls it again to relist. Our Run
//     lists, watches and relists until its context ends, so a test script
//     cancels the context where client-go's ListAndWatch would return,
//     and a relist is provoked the way a server provokes one (an ERROR
//     event with a 410);
//   - client-go's tests inject a delay function that returns at once.
//     instantClock does the same for our backoff: its timers fire at once
//     and it records the waits asked for;
//   - the Sink is the recorder of helpers_test.go, whose model stands for
//     client-go's store.

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/testkit"
)

// instantClock is a fake clock whose timers fire at once, without moving
// time, like client-go's fakeDelayFunc; it records every wait asked for.
type instantClock struct {
	*testingclock.FakeClock
	mu    sync.Mutex
	waits []time.Duration
}

func newInstantClock() *instantClock {
	return &instantClock{FakeClock: testingclock.NewFakeClock(time.Unix(10000, 0))}
}

func (c *instantClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return firedTimer{ch}
}

func (c *instantClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type firedTimer struct{ ch chan time.Time }

func (t firedTimer) C() <-chan time.Time      { return t.ch }
func (t firedTimer) Stop() bool               { return false }
func (t firedTimer) Reset(time.Duration) bool { return false }
func (t firedTimer) String() string           { return "firedTimer" }

// request is one request a cgLW received.
type request struct {
	verb string // "list" or "watch"
	opts metav1.ListOptions
}

// cgLW is client-go's fake ListerWatcher: a cache.ListWatch whose
// functions script the server, recording every request. watchListOff
// makes it report that it does not support WatchList semantics, as
// client-go's toListWatcherWithUnSupportedWatchListSemantics does.
type cgLW struct {
	cache.ListWatch
	watchListOff bool

	mu       sync.Mutex
	requests []request
}

func newLW(list func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error),
	watchFn func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)) *cgLW {
	lw := &cgLW{}
	lw.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		lw.record("list", opts)
		if list == nil {
			return nil, apierrors.NewInternalError(errUnscripted)
		}
		return list(ctx, opts)
	}
	lw.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		lw.record("watch", opts)
		if watchFn == nil {
			return nil, apierrors.NewInternalError(errUnscripted)
		}
		return watchFn(ctx, opts)
	}
	return lw
}

var errUnscripted = errorString("request not scripted")

type errorString string

func (e errorString) Error() string { return string(e) }

func (lw *cgLW) IsWatchListSemanticsUnSupported() bool { return lw.watchListOff }

func (lw *cgLW) record(verb string, opts metav1.ListOptions) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.requests = append(lw.requests, request{verb, opts})
}

// got returns the requests so far, TimeoutSeconds cleared (it is random;
// TestWatchTimeout checks it).
func (lw *cgLW) got() []request {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	out := make([]request, len(lw.requests))
	for i, r := range lw.requests {
		r.opts.TimeoutSeconds = nil
		out[i] = r
	}
	return out
}

// count counts the requests of one verb.
func (lw *cgLW) count(verb string) int {
	n := 0
	for _, r := range lw.got() {
		if r.verb == verb {
			n++
		}
	}
	return n
}

// listReq and watchReq build expected requests.
func listReq(rv string, limit int64, match metav1.ResourceVersionMatch, cont string) request {
	return request{"list", metav1.ListOptions{ResourceVersion: rv, Limit: limit, ResourceVersionMatch: match, Continue: cont}}
}

func watchReq(rv string) request {
	return request{"watch", metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}
}

func watchListReq(rv string) request {
	t := true
	return request{"watch", metav1.ListOptions{
		ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents: &t, AllowWatchBookmarks: true,
	}}
}

// newCG returns a Reflector of pods from lw into sink, on clk (an
// instantClock when nil), without backoff jitter.
func newCG(t *testing.T, lw cache.ListerWatcherWithContext, sink Sink, clk clock.Clock, opts Options) *Reflector {
	t.Helper()
	if clk == nil {
		clk = newInstantClock()
	}
	opts.Clock = clk
	if opts.Backoff == nil {
		opts.Backoff = noJitter()
	}
	if opts.Logger == nil {
		logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4)))
		opts.Logger = &logger
	}
	r, err := New(lw, &corev1.Pod{}, sink, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// runToEnd runs r until ctx is cancelled (by the test's script) and
// fails the test if that takes longer than testkit.Timeout().
func runToEnd(t *testing.T, r *Reflector, ctx context.Context, cancel context.CancelFunc) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(testkit.Timeout()):
		cancel()
		<-done
		t.Fatalf("Run did not end within %v", testkit.Timeout())
	}
}

func mkList(rv string, pods ...*corev1.Pod) *corev1.PodList {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	return list
}

// endBookmark is the initial-events-end bookmark of a WatchList stream.
func endBookmark(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv,
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}
}

// expiredWatch returns a watch whose only event is an ERROR with a 410,
// as kube-apiserver reports an expired watch: it makes Run relist.
func expiredWatch() watch.Interface {
	w := watch.NewFakeWithChanSize(1, false)
	st := apierrors.NewResourceExpired("too old resource version").Status()
	w.Error(&st)
	return w
}

// items returns the recorder's model: name -> resourceVersion.
func (s *recorder) itemsByName() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, rv := range s.items {
		out[k[len("ns/"):]] = rv
	}
	return out
}

func (s *recorder) checkProtocol(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.violations) > 0 {
		t.Fatalf("Sink protocol violations:\n%v", s.violations)
	}
}
