package storebench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// RunOptions configures Measure. Zero fields take their defaults.
type RunOptions struct {
	// Options opens the target.
	Options
	// Updates is the number of updates measured. Default min(n, 20000).
	Updates int
	// GetSamples is the number of GetByKey lookups. Default 20000.
	GetSamples int
	// IndexSamples is the number of ByIndex lookups. Default 50.
	IndexSamples int
	// Seed seeds the choice of keys and namespaces. Default 1.
	Seed uint64
}

func (o RunOptions) withDefaults(n int) RunOptions {
	if o.Updates <= 0 {
		o.Updates = min(n, 20000)
	}
	if o.GetSamples <= 0 {
		o.GetSamples = 20000
	}
	if o.IndexSamples <= 0 {
		o.IndexSamples = 50
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Result is what Measure found for one implementation.
type Result struct {
	Impl string
	N    int
	// HeapPerObject is the settled Go heap the loaded store holds, per
	// pod, in bytes.
	HeapPerObject float64
	// FilePerObject is the bolt file's size per pod after the load, in
	// bytes; 0 for the in-memory stores.
	FilePerObject float64
	// AddPerSec and UpdatePerSec are pods written per second of store
	// time, in batches.
	AddPerSec, UpdatePerSec float64
	// AddCPU and UpdateCPU are the process CPU time per pod written
	// (garbage collection included): on a machine shared with other
	// processes, the cost that does not depend on how busy it is. Zero
	// where the process's CPU time is unknown.
	AddCPU, UpdateCPU time.Duration
	// Get and ByIndex are the lookup latencies.
	Get, ByIndex *measure.Latencies
	// Replace is the time the store took to replace its n pods.
	Replace time.Duration
}

// Measure opens a store of impl, loads pods 0..n-1 of c and measures, in
// this order: write throughput of the load, settled heap per object,
// update throughput, GetByKey and ByIndex latency, and Replace time. The
// caller should not allocate concurrently: the heap figure is the
// difference of the settled heap before the store was opened and after it
// was loaded.
func Measure(ctx context.Context, impl string, c *Corpus, n int, opts RunOptions) (Result, error) {
	if n <= 0 || n > c.Len() {
		return Result{}, fmt.Errorf("%w: measure %d pods with a corpus of %d", ErrInvalidArgument, n, c.Len())
	}
	opts = opts.withDefaults(n)
	res := Result{Impl: impl, N: n}
	before := measure.SettledHeap()
	t, err := Open(ctx, impl, opts.Options)
	if err != nil {
		return res, err
	}
	defer t.Close()
	var sw measure.Stopwatch
	if err := Load(ctx, t, c, n, &sw); err != nil {
		return res, err
	}
	res.AddPerSec = measure.PerSecond(n, sw.Elapsed())
	res.AddCPU = sw.CPU() / time.Duration(n)
	after := measure.SettledHeap()
	res.HeapPerObject = (float64(after) - float64(before)) / float64(n)
	size, err := t.FileBytes()
	if err != nil {
		return res, err
	}
	res.FilePerObject = float64(size) / float64(n)

	sw.Reset()
	if err := Update(ctx, t, c, n, opts.Updates, 1, &sw); err != nil {
		return res, err
	}
	res.UpdatePerSec = measure.PerSecond(opts.Updates, sw.Elapsed())
	res.UpdateCPU = sw.CPU() / time.Duration(opts.Updates)

	rng := rand.New(rand.NewPCG(opts.Seed, 0))
	res.Get = measure.NewLatencies(opts.GetSamples)
	if err := GetByKey(t, c, n, opts.GetSamples, rng, res.Get, &sw); err != nil {
		return res, err
	}
	res.ByIndex = measure.NewLatencies(opts.IndexSamples)
	if err := ByNamespace(t, c, n, opts.IndexSamples, rng, res.ByIndex, &sw); err != nil {
		return res, err
	}

	sw.Reset()
	if err := Replace(ctx, t, c, n, 2, &sw); err != nil {
		return res, err
	}
	res.Replace = sw.Elapsed()
	if err := t.Close(); err != nil {
		return res, err
	}
	return res, nil
}

// Targets are the goals of the issue that asked for these benchmarks, for
// the bolt store at 100k pods on a 2-core machine.
const (
	// TargetHeapRatio: bolt heap per object at most 1/20 of client-go's.
	TargetHeapRatio = 1.0 / 20
	// TargetWritesPerSec: batched writes of at least 30k pods/s.
	TargetWritesPerSec = 30000
	// TargetGetP50: GetByKey p50 at most 25 µs.
	TargetGetP50 = 25 * time.Microsecond
)

// Table lays results out side by side, one column per implementation in
// the order given (the first is the baseline), with the targets on the
// bolt column when there is one.
func Table(title string, results []Result) *measure.Table {
	t := &measure.Table{Title: title}
	boltCol := measure.SetColumns(t, results, func(r Result) string { return r.Impl }, Bolt)
	target := func(tg measure.Target) *measure.Target {
		if boltCol < 0 {
			return nil
		}
		tg.Column = boltCol
		return &tg
	}
	col := func(f func(Result) float64) []float64 { return measure.Values(results, f) }
	lat := func(l *measure.Latencies, p float64) float64 {
		if l == nil || l.Len() == 0 {
			return math.NaN()
		}
		return measure.Micros(l.Percentile(p))
	}
	t.Add("heap bytes/pod", target(measure.Target{AtMost: true, Value: TargetHeapRatio, Ratio: true}),
		col(func(r Result) float64 { return r.HeapPerObject })...)
	t.Add("file bytes/pod", nil, col(func(r Result) float64 {
		if r.Impl != Bolt {
			return math.NaN()
		}
		return r.FilePerObject
	})...)
	t.Add("add pods/s (batched, watch order)", target(measure.Target{Value: TargetWritesPerSec}),
		col(func(r Result) float64 { return r.AddPerSec })...)
	t.Add("update pods/s (batched, watch order)", target(measure.Target{Value: TargetWritesPerSec}),
		col(func(r Result) float64 { return r.UpdatePerSec })...)
	t.Add("add CPU µs/pod", nil, col(func(r Result) float64 { return measure.Micros(r.AddCPU) })...)
	t.Add("update CPU µs/pod", nil, col(func(r Result) float64 { return measure.Micros(r.UpdateCPU) })...)
	t.Add("GetByKey p50 µs", target(measure.Target{AtMost: true, Value: measure.Micros(TargetGetP50)}),
		col(func(r Result) float64 { return lat(r.Get, 50) })...)
	t.Add("GetByKey p99 µs", nil, col(func(r Result) float64 { return lat(r.Get, 99) })...)
	t.Add("ByIndex(namespace) p50 µs", nil, col(func(r Result) float64 { return lat(r.ByIndex, 50) })...)
	t.Add("ByIndex(namespace) p99 µs", nil, col(func(r Result) float64 { return lat(r.ByIndex, 99) })...)
	t.Add("Replace s", nil, col(func(r Result) float64 { return r.Replace.Seconds() })...)
	t.Add("relist pods/s (Replace, key order)", target(measure.Target{Value: TargetWritesPerSec}),
		col(func(r Result) float64 { return measure.PerSecond(r.N, r.Replace) })...)
	return t
}
