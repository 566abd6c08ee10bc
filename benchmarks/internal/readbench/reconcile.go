package readbench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
)

// appLabel is the podgen label the reconcile loop selects its
// namespace's pods by.
const appLabel = "app.kubernetes.io/name"

// reconcile runs samples iterations of a controller's loop: a watch event
// updates a pod, chosen with a Zipf(1.1) skew, in the store (as the
// informer writes it), then the reconcile reads it back through the
// lister (Get) and lists the pods of its namespace that share its app
// label. It returns the latency of the two reads and, if gather reports
// the bolt store's hot tier, the share of the Gets it served.
func reconcile(ctx context.Context, t *storebench.Target, l PodLister, c *storebench.Corpus, n, samples int, seed uint64, gather prometheus.Gatherer) (*measure.Latencies, float64, error) {
	lat := measure.NewLatencies(samples)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, seed+2)), 1.1, 1, uint64(n-1))
	stride := measure.SpreadStride(n)
	hits0, misses0 := hotCounts(gather)
	for s := range samples {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		i := int(zipf.Uint64()) * stride % n
		p, err := c.Updated(i, s+1, fmt.Sprint(n+s+1))
		if err != nil {
			return nil, 0, err
		}
		if err := t.Indexer.Update(p); err != nil {
			return nil, 0, fmt.Errorf("readbench: event %d: %w", s, err)
		}
		sel := labels.SelectorFromSet(labels.Set{appLabel: p.Labels[appLabel]})
		start := time.Now()
		got, err := l.Pods(p.Namespace).Get(p.Name)
		if err != nil {
			return nil, 0, fmt.Errorf("readbench: reconcile get %s: %w", c.Key(i), err)
		}
		if got.ResourceVersion != p.ResourceVersion {
			return nil, 0, fmt.Errorf("readbench: reconcile get %s: resourceVersion %s, want %s", c.Key(i), got.ResourceVersion, p.ResourceVersion)
		}
		pods, err := l.Pods(p.Namespace).List(sel)
		lat.Add(time.Since(start))
		if err != nil {
			return nil, 0, fmt.Errorf("readbench: reconcile list %s: %w", p.Namespace, err)
		}
		if len(pods) == 0 {
			return nil, 0, fmt.Errorf("readbench: reconcile list %s %s: none, want at least the pod itself", p.Namespace, sel)
		}
	}
	hits1, misses1 := hotCounts(gather)
	rate := math.NaN()
	if d := (hits1 - hits0) + (misses1 - misses0); d > 0 {
		rate = (hits1 - hits0) / d
	}
	return lat, rate, nil
}

// hotCounts returns the hot tier's hit and miss counters that g reports
// (summed over resources), zeros without g.
func hotCounts(g prometheus.Gatherer) (hits, misses float64) {
	if g == nil {
		return 0, 0
	}
	mfs, err := g.Gather()
	if err != nil {
		return 0, 0
	}
	for _, mf := range mfs {
		var sum float64
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		switch mf.GetName() {
		case "warmcache_store_hot_hits_total":
			hits = sum
		case "warmcache_store_hot_misses_total":
			misses = sum
		}
	}
	return hits, misses
}
