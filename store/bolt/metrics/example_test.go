package metrics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warmcache/warmcache/factory"
	informermetrics "github.com/warmcache/warmcache/informer/metrics"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/metrics"
)

// Register the store's metrics beside the informers' on your own registry:
// the factory passes Options.Bolt to the file it opens.
func Example() {
	reg := prometheus.NewRegistry()
	stores, err := metrics.New(reg)
	if err != nil {
		panic(err)
	}
	informers, err := informermetrics.New(reg, informermetrics.Options{})
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	f, err := factory.New(context.Background(), factory.Options{
		Path:       filepath.Join(dir, "cache.db"),
		Bolt:       bolt.Options{Sync: bolt.UnsafeNoSync, Metrics: stores},
		MetricsFor: informers.For,
		ClusterID:  "example",
	})
	if err != nil {
		panic(err)
	}
	defer func() { _ = f.Shutdown() }()
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "warmcache_store_file_check_done" {
			fmt.Println(mf.GetName(), len(mf.GetMetric()))
		}
	}
	// Output:
	// warmcache_store_file_check_done 1
}
