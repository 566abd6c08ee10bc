// Package metrics exposes warmcache informers' measurements as Prometheus
// metrics. A Set registers its collectors on a registry the caller gives
// (never the global one unless the caller passes it); Set.For returns the
// informer.Metrics of one informer, its series labelled informer=<name>.
//
// Metrics (with the default namespace "warmcache"):
//
//	warmcache_informer_lists_total               LIST requests (each page is one)
//	warmcache_informer_watches_total{watchlist}  WATCH requests
//	warmcache_informer_relists_total             relists begun, whatever the cause
//	warmcache_informer_resumes_total             warm starts that resumed the watch
//	warmcache_informer_expired_total             410 Gone/Expired answers
//	warmcache_informer_queue_depth               deltas and listed objects queued
//	warmcache_informer_queue_adds_total          deltas and listed objects accepted
//	warmcache_informer_apply_duration_seconds    store writes (one per batch or relist step)
//	warmcache_informer_apply_objects_total       objects written
//	warmcache_informer_apply_failures_total      failed store writes (retried)
//	warmcache_informer_store_healthy             1 while store writes succeed, 0 while they fail
//	warmcache_informer_store_objects             objects in the store
//	warmcache_informer_replay_duration_seconds{kind}  replays to handlers (warm-start, handler, relist)
//	warmcache_informer_replay_objects_total{kind}     objects replayed
//
// and, for a queue budget shared by several informers (ForBudget, labelled
// budget=<name>; factory.Options.QueueBudgetMetrics):
//
//	warmcache_informer_queue_budget_used          deltas and listed objects queued in the queues sharing it
//	warmcache_informer_queue_budget_limit         its limit
//	warmcache_informer_queue_budget_waits_total   pushes that waited for it
//
// and, for a list gate (ForListGate; factory.Options.ListGateMetrics),
// per informer:
//
//	warmcache_informer_list_gate_holding          1 while the informer's relist or replay holds a pass
//	warmcache_informer_list_gate_wait_seconds     how long its relists and replays waited for one
package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/reflector"
)

// Options configures New. The zero value is valid.
type Options struct {
	// Namespace prefixes every metric name. Default "warmcache".
	Namespace string
	// ApplyBuckets are the buckets of the apply duration histogram, in
	// seconds. Default: 100µs to ~3s, doubling.
	ApplyBuckets []float64
	// ReplayBuckets are the buckets of the replay duration histogram, in
	// seconds. Default: 1ms to ~65s, quadrupling.
	ReplayBuckets []float64
}

// Set is the collectors of any number of informers. It is safe for
// concurrent use.
type Set struct {
	lists, relists, resumes, expired, queueAdds *prometheus.CounterVec
	applyObjects, applyFailures                 *prometheus.CounterVec
	watches, replayObjects                      *prometheus.CounterVec
	queueDepth, storeObjects, healthy           *prometheus.GaugeVec
	budgetUsed, budgetLimit                     *prometheus.GaugeVec
	budgetWaits                                 *prometheus.CounterVec
	applyDuration, replayDuration               *prometheus.HistogramVec
	gateHolding                                 *prometheus.GaugeVec
	gateWait                                    *prometheus.HistogramVec
}

// New creates the collectors and registers them on reg. It returns the
// registry's error if any of them is already registered there (one Set
// per registry and namespace).
func New(reg prometheus.Registerer, opts Options) (*Set, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: %w: nil Registerer", informer.ErrInvalidOptions)
	}
	ns := opts.Namespace
	if ns == "" {
		ns = "warmcache"
	}
	if opts.ApplyBuckets == nil {
		opts.ApplyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 16)
	}
	if opts.ReplayBuckets == nil {
		opts.ReplayBuckets = prometheus.ExponentialBuckets(0.001, 4, 9)
	}
	label := []string{"informer"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "informer", Name: name, Help: help}, append(label, labels...))
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "informer", Name: name, Help: help}, label)
	}
	s := &Set{
		lists:         counter("lists_total", "LIST requests sent by the reflector (each page is one)."),
		watches:       counter("watches_total", "WATCH requests sent by the reflector.", "watchlist"),
		relists:       counter("relists_total", "Relists begun, whatever the cause."),
		resumes:       counter("resumes_total", "Warm starts that resumed the watch from the persisted resourceVersion."),
		expired:       counter("expired_total", "410 Gone/Expired answers."),
		queueAdds:     counter("queue_adds_total", "Deltas and listed objects accepted by the queue."),
		applyObjects:  counter("apply_objects_total", "Objects written to the store."),
		applyFailures: counter("apply_failures_total", "Failed store writes (each is retried)."),
		replayObjects: counter("replay_objects_total", "Objects replayed to handlers.", "kind"),
		queueDepth:    gauge("queue_depth", "Deltas and listed objects queued between the reflector and the store."),
		storeObjects:  gauge("store_objects", "Objects in the store."),
		healthy:       gauge("store_healthy", "1 while store writes succeed, 0 while they fail."),
		budgetUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "informer", Name: "queue_budget_used",
			Help: "Deltas and listed objects queued in the queues sharing a queue budget."}, []string{"budget"}),
		budgetLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "informer", Name: "queue_budget_limit",
			Help: "The limit of a queue budget."}, []string{"budget"}),
		budgetWaits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "informer", Name: "queue_budget_waits_total",
			Help: "Pushes into a queue that waited for its queue budget."}, []string{"budget"}),
		applyDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "informer", Name: "apply_duration_seconds",
			Help: "Duration of store writes (one transaction per batch or relist step).", Buckets: opts.ApplyBuckets}, label),
		replayDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "informer", Name: "replay_duration_seconds",
			Help: "Duration of replays of the store to handlers.", Buckets: opts.ReplayBuckets}, []string{"informer", "kind"}),
		gateHolding: gauge("list_gate_holding", "1 while the informer's relist or replay holds a pass of the list gate."),
		gateWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "informer", Name: "list_gate_wait_seconds",
			Help: "Time relists and replays waited for a pass of the list gate.", Buckets: opts.ReplayBuckets}, label),
	}
	for _, c := range []prometheus.Collector{s.lists, s.watches, s.relists, s.resumes, s.expired, s.queueAdds,
		s.applyObjects, s.applyFailures, s.replayObjects, s.queueDepth, s.storeObjects, s.healthy,
		s.applyDuration, s.replayDuration, s.budgetUsed, s.budgetLimit, s.budgetWaits, s.gateHolding, s.gateWait} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return s, nil
}

// For returns the metrics of the informer named name, for
// informer.Options.Metrics. Two informers must not share a name.
func (s *Set) For(name string) informer.Metrics {
	m := &recorder{
		lists:         s.lists.WithLabelValues(name),
		watches:       s.watches.WithLabelValues(name, "false"),
		watchLists:    s.watches.WithLabelValues(name, "true"),
		relists:       s.relists.WithLabelValues(name),
		resumes:       s.resumes.WithLabelValues(name),
		expired:       s.expired.WithLabelValues(name),
		queueAdds:     s.queueAdds.WithLabelValues(name),
		applyObjects:  s.applyObjects.WithLabelValues(name),
		applyFailures: s.applyFailures.WithLabelValues(name),
		queueDepth:    s.queueDepth.WithLabelValues(name),
		storeObjects:  s.storeObjects.WithLabelValues(name),
		healthy:       s.healthy.WithLabelValues(name),
		applyDuration: s.applyDuration.WithLabelValues(name),
		set:           s,
		name:          name,
	}
	m.healthy.Set(1)
	return m
}

// ForBudget returns the metrics of the queue budget named name, for
// factory.Options.QueueBudgetMetrics (deltafifo.BudgetOptions.Metrics).
// Two budgets must not share a name.
func (s *Set) ForBudget(name string) deltafifo.BudgetMetrics {
	return &budgetRecorder{
		used:  s.budgetUsed.WithLabelValues(name),
		limit: s.budgetLimit.WithLabelValues(name),
		waits: s.budgetWaits.WithLabelValues(name),
	}
}

// ForListGate returns the metrics of a list gate, for
// factory.Options.ListGateMetrics (reflector.ListGateOptions.Metrics),
// labelled with the informer that holds or waits.
func (s *Set) ForListGate() reflector.ListGateMetrics { return gateRecorder{s} }

type gateRecorder struct{ s *Set }

func (g gateRecorder) Waited(name string, d time.Duration) {
	g.s.gateWait.WithLabelValues(name).Observe(d.Seconds())
}

func (g gateRecorder) Holding(name string, holding bool) {
	v := 0.0
	if holding {
		v = 1
	}
	g.s.gateHolding.WithLabelValues(name).Set(v)
}

type budgetRecorder struct {
	used, limit prometheus.Gauge
	waits       prometheus.Counter
}

func (m *budgetRecorder) Used(used, limit int) {
	m.used.Set(float64(used))
	m.limit.Set(float64(limit))
}

func (m *budgetRecorder) Blocked() { m.waits.Inc() }

type recorder struct {
	lists, watches, watchLists, relists, resumes, expired prometheus.Counter
	queueAdds, applyObjects, applyFailures                prometheus.Counter
	queueDepth, storeObjects, healthy                     prometheus.Gauge
	applyDuration                                         prometheus.Observer
	set                                                   *Set
	name                                                  string
}

var _ informer.Metrics = (*recorder)(nil)

func (m *recorder) ListRequested() { m.lists.Inc() }

func (m *recorder) WatchRequested(watchList bool) {
	if watchList {
		m.watchLists.Inc()
	} else {
		m.watches.Inc()
	}
}

func (m *recorder) RelistStarted() { m.relists.Inc() }
func (m *recorder) Resumed()       { m.resumes.Inc() }
func (m *recorder) Expired()       { m.expired.Inc() }
func (m *recorder) Depth(d int)    { m.queueDepth.Set(float64(d)) }
func (m *recorder) Adds(n int)     { m.queueAdds.Add(float64(n)) }

func (m *recorder) Applied(d time.Duration, n int, err error) {
	m.applyDuration.Observe(d.Seconds())
	if err != nil {
		m.applyFailures.Inc()
		return
	}
	m.applyObjects.Add(float64(n))
}

func (m *recorder) StoreObjects(n int) { m.storeObjects.Set(float64(n)) }

func (m *recorder) Replayed(kind string, d time.Duration, n int) {
	m.set.replayDuration.WithLabelValues(m.name, kind).Observe(d.Seconds())
	m.set.replayObjects.WithLabelValues(m.name, kind).Add(float64(n))
}

func (m *recorder) Healthy(ok bool) {
	if ok {
		m.healthy.Set(1)
	} else {
		m.healthy.Set(0)
	}
}
