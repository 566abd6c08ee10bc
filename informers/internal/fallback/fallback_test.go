package fallback

import (
	"context"
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
