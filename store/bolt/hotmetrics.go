package bolt

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Store metrics, labelled resource=<the store's Identity.String()>: the
// hot tier's
//
//	warmcache_store_hot_hits_total       point reads (Get, GetByKey) served by the hot tier
//	warmcache_store_hot_misses_total     point reads that decoded the object
//	warmcache_store_hot_evictions_total  objects evicted to stay within the byte budget
//	warmcache_store_hot_bytes            estimated bytes of the cached objects
//	warmcache_store_hot_entries          cached objects
//
// and, also labelled part=envelope|item|index|meta|live,
//
//	warmcache_store_corrupt_objects_total  stored records found corrupt: a checksum
//	                                       mismatch or an object that does not decode
//
// which counts each detection: an object skipped by a read (envelope: its
// payload, resourceVersion or UID; item: its item entry), an index entry
// skipped (index), and a resource whose meta or live pointer was found
// damaged on open and its data discarded (meta, live). A damaged object
// read again before the relist rewrites it is counted again.
//
// A DB registers them on Options.Registerer (nothing is registered without
// one). Several DBs may share a registry: the second finds the first's
// collectors and adds to them.
type hotCollectors struct {
	hits, misses, evictions *prometheus.CounterVec
	bytes, entries          *prometheus.GaugeVec
	// corrupt is labelled by resource and part.
	corrupt *prometheus.CounterVec
}

// hotMetrics is one store's series.
type hotMetrics struct {
	hits, misses, evictions prometheus.Counter
	bytes, entries          prometheus.Gauge
}

// newHotCollectors creates the collectors and registers them on reg if it
// is not nil.
func newHotCollectors(reg prometheus.Registerer) (*hotCollectors, error) {
	label := []string{"resource"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "warmcache", Subsystem: "store", Name: name, Help: help}, label)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "warmcache", Subsystem: "store", Name: name, Help: help}, label)
	}
	c := &hotCollectors{
		hits:      counter("hot_hits_total", "Point reads served by the hot tier of decoded objects."),
		misses:    counter("hot_misses_total", "Point reads that found no valid object in the hot tier and decoded it."),
		evictions: counter("hot_evictions_total", "Objects evicted from the hot tier to stay within its byte budget."),
		bytes:     gauge("hot_bytes", "Estimated heap bytes of the objects in the hot tier."),
		entries:   gauge("hot_entries", "Objects in the hot tier."),
		corrupt: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "warmcache", Subsystem: "store", Name: "corrupt_objects_total",
			Help: "Stored records found corrupt (checksum mismatch, or an object that does not decode), by part: envelope, item, index (skipped by reads), meta, live (the resource discarded on open)."},
			[]string{"resource", "part"}),
	}
	if reg == nil {
		return c, nil
	}
	for _, p := range []**prometheus.CounterVec{&c.hits, &c.misses, &c.evictions, &c.corrupt} {
		if err := register(reg, p); err != nil {
			return nil, err
		}
	}
	for _, p := range []**prometheus.GaugeVec{&c.bytes, &c.entries} {
		if err := register(reg, p); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// register registers *c on reg, or replaces *c with the collector already
// registered there under the same description.
func register[T prometheus.Collector](reg prometheus.Registerer, c *T) error {
	err := reg.Register(*c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			*c = existing
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("register store metrics: %w", err)
	}
	return nil
}

// forResource returns the series of one resource.
func (c *hotCollectors) forResource(name string) hotMetrics {
	return hotMetrics{
		hits:      c.hits.WithLabelValues(name),
		misses:    c.misses.WithLabelValues(name),
		evictions: c.evictions.WithLabelValues(name),
		bytes:     c.bytes.WithLabelValues(name),
		entries:   c.entries.WithLabelValues(name),
	}
}
