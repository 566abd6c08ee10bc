package fallback

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStopStopsEveryInformer runs two informers on a context that never
// ends: Stop returns once both have returned (goleak checks no goroutine
// is left).
func TestStopStopsEveryInformer(t *testing.T) {
	var r Runner
	var infs []cache.SharedIndexInformer
	for range 2 {
		inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
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
