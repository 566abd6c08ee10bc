package metrics_test

import (
	"context"
	"fmt"

	"github.com/warmcache/warmcache/factory"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warmcache/warmcache/informer/metrics"
)

// Register the metrics on your own registry and give each informer of a
// factory its labelled share, and the factory's queue budget its own.
func Example() {
	reg := prometheus.NewRegistry()
	set, err := metrics.New(reg, metrics.Options{})
	if err != nil {
		panic(err)
	}
	f, err := factory.New(context.Background(), factory.Options{MetricsFor: set.For, QueueBudgetMetrics: set.ForBudget("factory")})
	if err != nil {
		panic(err)
	}
	defer f.Shutdown()
	m := set.For("pods/v1")
	m.StoreObjects(3)
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "warmcache_informer_store_objects" {
			fmt.Println(mf.GetName(), mf.Metric[0].GetGauge().GetValue())
		}
	}
	// Output:
	// warmcache_informer_store_objects 3
}
