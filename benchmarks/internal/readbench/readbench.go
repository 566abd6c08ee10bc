// Package readbench measures the read path of a loaded store: typed lister
// lists by namespace and label selector (through client-go's listers and
// through warmcache's), and GetByKey with uniform and Zipf-skewed keys,
// each with its time, its transient heap (peak above the settled heap)
// and the bytes it allocated.
package readbench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientcorelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	corelisters "github.com/warmcache/warmcache/listers/core/v1"
)

// Read is one measured read.
type Read struct {
	// Name describes the read, with the number of objects it returns.
	Name string
	// Time is the median duration of its repetitions.
	Time time.Duration
	// Heap is the largest transient heap of its repetitions: the peak
	// heap while it ran (its result still live) above the settled heap
	// before it.
	Heap uint64
	// Alloc is the median of the bytes each repetition allocated.
	Alloc uint64
	// Objects is the number of objects the read returned.
	Objects int
}

// Options configures Measure.
type Options struct {
	// Reps is the number of repetitions of each list. Default 3.
	Reps int
	// GetSamples is the number of GetByKey lookups of each key
	// distribution. Default 20000.
	GetSamples int
	// Namespace is the namespace of the namespace-scoped lists. Default
	// "ns-007".
	Namespace string
	// ClusterSelector and NamespaceSelector select the pods of the
	// cluster-wide and namespace-scoped selector lists. Defaults
	// app.kubernetes.io/name=app-5 and app.kubernetes.io/name=app-7.
	ClusterSelector, NamespaceSelector string
	// Seed seeds the key choice. Default 1.
	Seed uint64
	// Reconciles is the number of iterations of the reconcile loop.
	// Default 2000.
	Reconciles int
	// Gatherer, if set, reports the bolt store's metrics, from which the
	// reconcile loop's hot tier hit rate is computed. Default: none (no
	// hit rate).
	Gatherer prometheus.Gatherer
	// Listers, if set, are the listers the rows read through, in place of
	// those built over the target's indexer (the listers of package
	// informers' factory, for example). Default: client-go's and
	// warmcache's NewPodLister over the target's indexer.
	Listers *Listers
}

// Listers are the two pod listers Measure reads through: the rows
// "client-go lister ..." read ClientGo, the rows "warmcache lister ..."
// read Warmcache, which the reconcile loop reads too (ClientGo on
// client-go's store).
type Listers struct {
	ClientGo, Warmcache PodLister
}

// PodLister is what both typed listers offer.
type PodLister interface {
	List(labels.Selector) ([]*corev1.Pod, error)
	Pods(string) clientcorelisters.PodNamespaceLister
}

func (o Options) withDefaults() Options {
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.GetSamples <= 0 {
		o.GetSamples = 20000
	}
	if o.Namespace == "" {
		o.Namespace = "ns-007"
	}
	if o.ClusterSelector == "" {
		o.ClusterSelector = "app.kubernetes.io/name=app-5"
	}
	if o.NamespaceSelector == "" {
		o.NamespaceSelector = "app.kubernetes.io/name=app-7"
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Reconciles <= 0 {
		o.Reconciles = 2000
	}
	return o
}

// Result is what Measure found for one store.
type Result struct {
	Impl  string
	Reads []Read
	// GetUniform and GetZipf are GetByKey latencies over uniformly
	// chosen keys and over Zipf-skewed keys (s = 1.1).
	GetUniform, GetZipf *measure.Latencies
	// Reconcile is the latency of the reconcile loop's reads (the Get
	// and the list after each event); HotHitRate the share of its Gets
	// the hot tier served (NaN if unknown).
	Reconcile  *measure.Latencies
	HotHitRate float64
}

// Measure runs the reads on t, which holds pods 0..n-1 of c. The caller
// must not allocate concurrently.
func Measure(ctx context.Context, t *storebench.Target, c *storebench.Corpus, n int, opts Options) (Result, error) {
	opts = opts.withDefaults()
	cluster, err := labels.Parse(opts.ClusterSelector)
	if err != nil {
		return Result{}, fmt.Errorf("readbench: cluster selector: %w", err)
	}
	inNS, err := labels.Parse(opts.NamespaceSelector)
	if err != nil {
		return Result{}, fmt.Errorf("readbench: namespace selector: %w", err)
	}
	res := Result{Impl: t.Name, HotHitRate: math.NaN()}
	ls := Listers{ClientGo: clientcorelisters.NewPodLister(t.Indexer), Warmcache: corelisters.NewPodLister(t.Indexer)}
	if opts.Listers != nil {
		ls = *opts.Listers
	}
	for _, l := range []struct {
		name string
		l    PodLister
	}{
		{"client-go lister", ls.ClientGo},
		{"warmcache lister", ls.Warmcache},
	} {
		for _, r := range []struct {
			what string
			fn   func() ([]*corev1.Pod, error)
		}{
			{"List(everything)", func() ([]*corev1.Pod, error) { return l.l.List(labels.Everything()) }},
			{"List(" + opts.ClusterSelector + ")", func() ([]*corev1.Pod, error) { return l.l.List(cluster) }},
			{"Pods(" + opts.Namespace + ").List(everything)", func() ([]*corev1.Pod, error) { return l.l.Pods(opts.Namespace).List(labels.Everything()) }},
			{"Pods(" + opts.Namespace + ").List(" + opts.NamespaceSelector + ")", func() ([]*corev1.Pod, error) { return l.l.Pods(opts.Namespace).List(inNS) }},
		} {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			read, err := measureRead(l.name+" "+r.what, opts.Reps, r.fn)
			if err != nil {
				return res, fmt.Errorf("readbench: %s %s: %w", t.Name, read.Name, err)
			}
			res.Reads = append(res.Reads, read)
		}
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(opts.Seed, opts.Seed+1)), 1.1, 1, uint64(n-1))
	// Zipf ranks are spread over the key space, so that the hot keys are
	// not neighbours in the file.
	stride := measure.SpreadStride(n)
	res.GetUniform, err = gets(t.Indexer, c, opts.GetSamples, func() int { return rng.IntN(n) })
	if err == nil {
		res.GetZipf, err = gets(t.Indexer, c, opts.GetSamples, func() int { return int(zipf.Uint64()) * stride % n })
	}
	if err != nil {
		return res, err
	}
	l := ls.Warmcache
	if t.Name == storebench.ClientGo {
		l = ls.ClientGo
	}
	res.Reconcile, res.HotHitRate, err = reconcile(ctx, t, l, c, n, opts.Reconciles, opts.Seed, opts.Gatherer)
	return res, err
}

// measureRead runs fn reps times and returns its median time and
// allocation and its largest transient heap.
func measureRead(name string, reps int, fn func() ([]*corev1.Pod, error)) (Read, error) {
	r := Read{Name: name}
	times := make([]time.Duration, 0, reps)
	allocs := make([]uint64, 0, reps)
	for range reps {
		settled := measure.SettledHeap()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		peak := measure.StartPeak(time.Millisecond)
		start := time.Now()
		pods, err := fn()
		d := time.Since(start)
		top := max(peak.Stop(), measure.HeapObjects())
		runtime.ReadMemStats(&after)
		if err != nil {
			return r, err
		}
		r.Objects = len(pods)
		runtime.KeepAlive(pods)
		times = append(times, d)
		allocs = append(allocs, after.TotalAlloc-before.TotalAlloc)
		if top > settled {
			r.Heap = max(r.Heap, top-settled)
		}
	}
	slices.Sort(times)
	slices.Sort(allocs)
	r.Time, r.Alloc = times[len(times)/2], allocs[len(allocs)/2]
	r.Name = fmt.Sprintf("%s [%d]", r.Name, r.Objects)
	return r, nil
}

func gets(idx cache.Indexer, c *storebench.Corpus, samples int, next func() int) (*measure.Latencies, error) {
	lat := measure.NewLatencies(samples)
	for range samples {
		key := c.Key(next())
		start := time.Now()
		_, ok, err := idx.GetByKey(key)
		lat.Add(time.Since(start))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("readbench: key %q is not stored", key)
		}
	}
	return lat, nil
}

// Table returns the results side by side, the first as the baseline:
// milliseconds, transient heap in MB and allocated MB for each read, then
// GetByKey percentiles in microseconds.
func Table(title string, results []Result) *measure.Table {
	t := &measure.Table{Title: title}
	for _, r := range results {
		t.Columns = append(t.Columns, r.Impl)
	}
	if len(results) == 0 {
		return t
	}
	for i, read := range results[0].Reads {
		for _, unit := range []struct {
			suffix string
			value  func(Read) float64
		}{
			{" ms", func(r Read) float64 { return float64(r.Time) / float64(time.Millisecond) }},
			{" heap MB", func(r Read) float64 { return float64(r.Heap) / (1 << 20) }},
			{" alloc MB", func(r Read) float64 { return float64(r.Alloc) / (1 << 20) }},
		} {
			var vals []float64
			for _, r := range results {
				vals = append(vals, unit.value(r.Reads[i]))
			}
			t.Add(read.Name+unit.suffix, target(t.Columns, read.Name+unit.suffix), vals...)
		}
	}
	for _, g := range []struct {
		name string
		lat  func(Result) *measure.Latencies
		p    float64
	}{
		{"GetByKey uniform p50 µs", func(r Result) *measure.Latencies { return r.GetUniform }, 50},
		{"GetByKey uniform p99 µs", func(r Result) *measure.Latencies { return r.GetUniform }, 99},
		{"GetByKey Zipf(1.1) p50 µs", func(r Result) *measure.Latencies { return r.GetZipf }, 50},
		{"GetByKey Zipf(1.1) p99 µs", func(r Result) *measure.Latencies { return r.GetZipf }, 99},
		{"reconcile reads (event, Get, Pods(ns).List(app)) p50 µs", func(r Result) *measure.Latencies { return r.Reconcile }, 50},
		{"reconcile reads (event, Get, Pods(ns).List(app)) p99 µs", func(r Result) *measure.Latencies { return r.Reconcile }, 99},
	} {
		var vals []float64
		for _, r := range results {
			vals = append(vals, measure.Micros(g.lat(r).Percentile(g.p)))
		}
		t.Add(g.name, target(t.Columns, g.name), vals...)
	}
	var rates []float64
	for _, r := range results {
		rates = append(rates, 100*r.HotHitRate)
	}
	t.Add("reconcile Get hot tier hit rate %", nil, rates...)
	return t
}

// targets are issue 10's goals for the bolt store at 100k pods on 2
// cores, by the start of the row's name and its unit.
var targets = []struct {
	prefix, suffix string
	atMost         float64
}{
	{"warmcache lister List(everything)", " ms", 2500},
	{"warmcache lister Pods(ns-007).List(everything)", " ms", 40},
	{"warmcache lister List(app.kubernetes.io/name=app-5)", " heap MB", 2},
	{"GetByKey Zipf(1.1) p50", " µs", 3},
}

// BoltHot names the column of the bolt store with a hot tier large
// enough to hold every pod, whose lists have hotTargets.
const BoltHot = "bolt-hot"

// hotTargets are issue 35's goals for the lists of a store whose hot tier
// holds every pod: at most this ratio to client-go's, by the start of the
// row's name and its unit.
var hotTargets = []struct {
	prefix, suffix string
	atMost         float64
}{
	{"warmcache lister List(everything)", " ms", 5},
	{"warmcache lister Pods(ns-007).List(everything)", " ms", 5},
}

// target returns the goal of a row, if any: hotTargets' on the BoltHot
// column when there is one, else targets' on the bolt column.
func target(columns []string, row string) *measure.Target {
	if col := slices.Index(columns, BoltHot); col > 0 {
		for _, g := range hotTargets {
			if strings.HasPrefix(row, g.prefix) && strings.HasSuffix(row, g.suffix) {
				return &measure.Target{Column: col, AtMost: true, Value: g.atMost, Ratio: true}
			}
		}
	}
	col := slices.Index(columns, storebench.Bolt)
	if col < 0 {
		return nil
	}
	for _, g := range targets {
		if strings.HasPrefix(row, g.prefix) && strings.HasSuffix(row, g.suffix) {
			return &measure.Target{Column: col, AtMost: true, Value: g.atMost}
		}
	}
	return nil
}
