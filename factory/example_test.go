package factory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/fakesource"
)

// A factory keeps every informer's cache in one bbolt file: the second
// run starts warm, from the file, without listing.
func Example() {
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer os.RemoveAll(dir)
	src, _ := fakesource.New(fakesource.Options{})
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	lw := src.Endpoint(corev1.SchemeGroupVersion.WithKind("Pod"), "")

	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		f, err := factory.New(ctx, factory.Options{Path: filepath.Join(dir, "cache.db")})
		if err != nil {
			panic(err)
		}
		inf, err := f.InformerFor(ctx, podsGVR, &corev1.Pod{}, lw, factory.Scope{}, nil)
		if err != nil {
			panic(err)
		}
		f.Start(ctx)
		f.WaitForCacheSync(ctx)
		fmt.Printf("run %d: %d pods, lists so far: %d\n", run, len(inf.GetStore().ListKeys()), src.Stats().Lists+src.Stats().WatchLists)
		cancel()
		if err := f.Shutdown(); err != nil {
			panic(err)
		}
	}
	// Output:
	// run 1: 1 pods, lists so far: 1
	// run 2: 1 pods, lists so far: 2
}
