// Package metrics records the measurements of package bolt's DBs and
// stores as Prometheus metrics: a Set registers its collectors on a
// registry the caller gives (never the global one unless the caller passes
// it) and is the bolt.Metrics of any number of DBs (bolt.Options.Metrics,
// factory.Options.Bolt.Metrics).
//
// Metrics, labelled resource=<the store's Identity.String()>:
//
//	warmcache_store_hot_hits_total       point reads (Get, GetByKey) served by the hot tier
//	warmcache_store_hot_misses_total     point reads that decoded the object
//	warmcache_store_hot_evictions_total  objects evicted to stay within the byte budget
//	warmcache_store_hot_bytes            estimated bytes of the cached objects
//	warmcache_store_hot_entries          cached objects
//
// also labelled part=envelope|item|index|meta|live:
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
// And labelled file=<the path given to bolt.Open>:
//
//	warmcache_store_file_corrupt                1 once corruption was found in the open file (the check or a read), else 0
//	warmcache_store_file_check_done             1 once every page of the file was checked (at Open or in the background), else 0
//	warmcache_store_file_check_duration_seconds how long the background check took (0 when Open checked every page)
package metrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warmcache/warmcache/store/bolt"
)

// Set is the collectors of any number of DBs. It is safe for concurrent
// use.
type Set struct {
	hits, misses, evictions *prometheus.CounterVec
	bytes, entries          *prometheus.GaugeVec
	// corrupt is labelled by resource and part.
	corrupt                     *prometheus.CounterVec
	fileCorrupt, done, duration *prometheus.GaugeVec
}

var _ bolt.Metrics = (*Set)(nil)

// New creates the collectors and registers them on reg. A registry that
// already holds them (another Set's) keeps them: the new Set adds to them.
func New(reg prometheus.Registerer) (*Set, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: %w: nil Registerer", bolt.ErrInvalidOptions)
	}
	label := []string{"resource"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "warmcache", Subsystem: "store", Name: name, Help: help}, label)
	}
	gauge := func(name, help string, label string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "warmcache", Subsystem: "store", Name: name, Help: help}, []string{label})
	}
	s := &Set{
		hits:      counter("hot_hits_total", "Point reads served by the hot tier of decoded objects."),
		misses:    counter("hot_misses_total", "Point reads that found no valid object in the hot tier and decoded it."),
		evictions: counter("hot_evictions_total", "Objects evicted from the hot tier to stay within its byte budget."),
		bytes:     gauge("hot_bytes", "Estimated heap bytes of the objects in the hot tier.", "resource"),
		entries:   gauge("hot_entries", "Objects in the hot tier.", "resource"),
		corrupt: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "warmcache", Subsystem: "store", Name: "corrupt_objects_total",
			Help: "Stored records found corrupt (checksum mismatch, or an object that does not decode), by part: envelope, item, index (skipped by reads), meta, live (the resource discarded on open)."},
			[]string{"resource", "part"}),
		fileCorrupt: gauge("file_corrupt", "1 once corruption was found in the open cache file (the background check or a read), else 0.", "file"),
		done:        gauge("file_check_done", "1 once every page of the cache file was checked (at open or in the background), else 0.", "file"),
		duration:    gauge("file_check_duration_seconds", "How long the background check of every page of the cache file took (0 when Open checked them).", "file"),
	}
	for _, p := range []**prometheus.CounterVec{&s.hits, &s.misses, &s.evictions, &s.corrupt} {
		if err := register(reg, p); err != nil {
			return nil, err
		}
	}
	for _, p := range []**prometheus.GaugeVec{&s.bytes, &s.entries, &s.fileCorrupt, &s.done, &s.duration} {
		if err := register(reg, p); err != nil {
			return nil, err
		}
	}
	return s, nil
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
		return fmt.Errorf("metrics: register: %w", err)
	}
	return nil
}

// Hot returns the series of the hot tier of resource.
func (s *Set) Hot(resource string) bolt.HotMetrics {
	return &hot{
		hits:      s.hits.WithLabelValues(resource),
		misses:    s.misses.WithLabelValues(resource),
		evictions: s.evictions.WithLabelValues(resource),
		bytes:     s.bytes.WithLabelValues(resource),
		entries:   s.entries.WithLabelValues(resource),
	}
}

// CorruptRecord counts a corrupt record of resource in part.
func (s *Set) CorruptRecord(resource, part string) {
	s.corrupt.WithLabelValues(resource, part).Inc()
}

// File returns the series of the file at path, set to 0: a DB opening the
// file starts them again.
func (s *Set) File(path string) bolt.FileMetrics {
	f := file{corrupt: s.fileCorrupt.WithLabelValues(path), done: s.done.WithLabelValues(path), duration: s.duration.WithLabelValues(path)}
	f.corrupt.Set(0)
	f.done.Set(0)
	f.duration.Set(0)
	return f
}

// hot is one store's hot tier series.
type hot struct {
	hits, misses, evictions prometheus.Counter
	bytes, entries          prometheus.Gauge
}

func (h *hot) Hit()     { h.hits.Inc() }
func (h *hot) Miss()    { h.misses.Inc() }
func (h *hot) Evicted() { h.evictions.Inc() }

func (h *hot) Added(bytes int64) {
	h.bytes.Add(float64(bytes))
	h.entries.Inc()
}

func (h *hot) Removed(bytes int64) {
	h.bytes.Sub(float64(bytes))
	h.entries.Dec()
}

// file is one file's series.
type file struct {
	corrupt, done, duration prometheus.Gauge
}

func (f file) Corrupt() { f.corrupt.Set(1) }

func (f file) Checked(d time.Duration, corrupt bool) {
	if corrupt {
		f.Corrupt()
	}
	f.done.Set(1)
	f.duration.Set(d.Seconds())
}
