package fallback

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// emptyLW lists no pod and watches a stream that sends nothing.
func emptyLW() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
}

// TestStopStopsEveryInformer runs two informers on a context that never
// ends: Stop returns once both have returned (goleak checks no goroutine
// is left).
func TestStopStopsEveryInformer(t *testing.T) {
	var r Runner
	var infs []cache.SharedIndexInformer
	for range 2 {
		inf := cache.NewSharedIndexInformer(emptyLW(), &corev1.Pod{}, 0, cache.Indexers{})
		r.Run(context.Background(), inf)
		infs = append(infs, inf)
	}
	r.Stop()
	for i, inf := range infs {
		if !inf.IsStopped() {
			t.Fatalf("informer %d still running after Stop", i)
		}
	}
	r.Stop() // a second Stop has nothing to stop
}

// TestStartsEachOnce starts two informers, one a fallback, twice: the
// factory.Factory's start runs each time, the fallback runs once, both are
// recorded started; Close stops the fallback, and a Start after it does
// nothing.
func TestStartsEachOnce(t *testing.T) {
	var s Starts[string]
	fb := cache.NewSharedIndexInformer(emptyLW(), &corev1.Pod{}, 0, cache.Indexers{})
	infs := map[string]cache.SharedIndexInformer{"fallback": fb, "warm": nil}
	startAll := 0
	isFallback := func(k string) bool { return k == "fallback" }
	for range 2 {
		s.Start(context.Background(), func(context.Context) bool { startAll++; return true }, infs, isFallback)
	}
	if startAll != 2 || !s.Started("fallback") || !s.Started("warm") || s.Started("other") {
		t.Fatalf("startAll called %d times, started fallback %v warm %v other %v", startAll, s.Started("fallback"), s.Started("warm"), s.Started("other"))
	}
	var mu sync.Mutex
	s.Close(&mu)
	s.Start(context.Background(), func(context.Context) bool { startAll++; return true }, map[string]cache.SharedIndexInformer{"late": fb}, isFallback)
	if startAll != 2 || s.Started("late") {
		t.Fatal("Start after Shutdown started something")
	}
	if !fb.IsStopped() {
		t.Fatal("the fallback informer still runs after Close")
	}
}

// TestStartsNothingOnceFactoryShutDown: a startAll that reports its
// factory.Factory shut down marks nothing started and runs no fallback.
func TestStartsNothingOnceFactoryShutDown(t *testing.T) {
	var s Starts[string]
	fb := cache.NewSharedIndexInformer(emptyLW(), &corev1.Pod{}, 0, cache.Indexers{})
	s.Start(context.Background(), func(context.Context) bool { return false }, map[string]cache.SharedIndexInformer{"fallback": fb, "warm": nil}, func(k string) bool { return k == "fallback" })
	if s.Started("fallback") || s.Started("warm") || len(s.cancels) != 0 {
		t.Fatalf("started fallback %v (%d run), warm %v; want nothing started", s.Started("fallback"), len(s.cancels), s.Started("warm"))
	}
}
