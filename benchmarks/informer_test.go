package benchmarks

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/informerbench"
	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// informerOp is one operation of BenchmarkInformer. Each iteration is a
// whole measurement (a sync, a churn, a restart); ns/op is overridden with
// the measured duration and the custom metrics are the figures to read.
type informerOp struct {
	name     string
	boltOnly bool
	run      func(b *testing.B, proc *apiproc.Process, impl string, n int)
}

var informerOps = []informerOp{
	{name: "coldsync", run: benchColdSync},
	{name: "events", run: benchEvents},
	{name: "warmstart", boltOnly: true, run: func(b *testing.B, p *apiproc.Process, impl string, n int) { benchWarm(b, p, n, true) }},
	{name: "warmstart-nohandler", boltOnly: true, run: func(b *testing.B, p *apiproc.Process, impl string, n int) { benchWarm(b, p, n, false) }},
}

// benchTimeout bounds each phase of an informer benchmark.
const benchTimeout = 30 * time.Minute

// generations numbers the churns, so that every update changes its pod.
var generations atomic.Int64

// BenchmarkInformer compares client-go's SharedIndexInformer with
// warmcache's informer on the memory and bolt stores, all fed over HTTP
// with protobuf by a fake API server in a child process; see the package
// documentation.
func BenchmarkInformer(b *testing.B) {
	var mu sync.Mutex
	procs := map[int]*apiproc.Process{}
	b.Cleanup(func() {
		for _, p := range procs {
			if err := p.Close(); err != nil {
				b.Error(err)
			}
		}
	})
	proc := func(b *testing.B, n int) *apiproc.Process {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := procs[n]; ok {
			return p
		}
		// One server at a time: each holds its pods in memory.
		for m, p := range procs {
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			delete(procs, m)
		}
		ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
		defer cancel()
		p, err := apiproc.Start(ctx, apiproc.Options{Pods: n})
		if err != nil {
			b.Fatal(err)
		}
		procs[n] = p
		return p
	}
	sizes := benchSizes(b)
	for _, impl := range informerbench.Impls {
		b.Run(impl, func(b *testing.B) {
			for _, op := range informerOps {
				if op.boltOnly && impl != informerbench.Bolt {
					continue
				}
				b.Run(op.name, func(b *testing.B) {
					for _, n := range sizes {
						b.Run(strconv.Itoa(n), func(b *testing.B) { op.run(b, proc(b, n), impl, n) })
					}
				})
			}
		})
	}
}

func benchContext(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	b.Cleanup(cancel)
	return ctx
}

// coldSync syncs a new informer and returns it running.
func coldSync(b *testing.B, proc *apiproc.Process, impl string, n int, opts informerbench.Options) (*informerbench.Informer, informerbench.Cold) {
	b.Helper()
	inf, cold, err := informerbench.ColdSync(benchContext(b), proc, impl, n, opts)
	if err != nil {
		b.Fatal(err)
	}
	return inf, cold
}

// stop stops inf and compacts the server's history up to what inf
// recorded (a bolt informer may restart warm from it).
func stop(b *testing.B, proc *apiproc.Process, inf *informerbench.Informer) {
	b.Helper()
	rv := inf.ResourceVersion()
	if err := inf.Stop(); err != nil {
		b.Fatal(err)
	}
	if err := proc.Compact(benchContext(b), rv); err != nil {
		b.Fatal(err)
	}
}

// benchColdSync: each iteration syncs a new informer from scratch.
// ns/op is the sync time; the heap metrics are per pod.
func benchColdSync(b *testing.B, proc *apiproc.Process, impl string, n int) {
	opts := informerbench.Options{Dir: b.TempDir()}
	var total, cpu time.Duration
	var peak, steady float64
	for range b.N {
		inf, cold := coldSync(b, proc, impl, n, opts)
		stop(b, proc, inf)
		total += cold.Duration
		cpu += cold.CPU
		peak, steady = cold.Heap.Peak, cold.Heap.Settled
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(peak/float64(n), "peak-heap-bytes/obj")
	b.ReportMetric(steady/float64(n), "steady-heap-bytes/obj")
}

// updatesPerChurn is the number of updates of one iteration of the events
// benchmark.
func updatesPerChurn(n int) int { return min(n, 5000) }

// benchEvents: each iteration has the server update updatesPerChurn(n)
// pods with the watch held back, then releases it; ns/op is the time the
// handler took to receive them all.
func benchEvents(b *testing.B, proc *apiproc.Process, impl string, n int) {
	inf, _ := coldSync(b, proc, impl, n, informerbench.Options{Dir: b.TempDir()})
	defer stop(b, proc, inf)
	m := updatesPerChurn(n)
	var total, cpu time.Duration
	for range b.N {
		ev, err := informerbench.Churn(benchContext(b), proc, inf, m, int(generations.Add(1)), 0)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Duration(float64(m) / ev.PerSec * float64(time.Second))
		cpu += ev.CPU
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(m*b.N)/total.Seconds(), "events/s")
	b.ReportMetric(measure.Micros(cpu)/float64(b.N), "cpu-µs/event")
}

// benchWarm: a bolt informer syncs once; each iteration changes 1% of the
// pods and restarts it from its file, with a handler that every pod is
// replayed to once caught up, or without. ns/op is the restart time to
// HasSynced (and the replay).
func benchWarm(b *testing.B, proc *apiproc.Process, n int, withHandler bool) {
	opts := informerbench.Options{Dir: b.TempDir()}
	inf, _ := coldSync(b, proc, informerbench.Bolt, n, opts)
	stop(b, proc, inf)
	var total, cpu time.Duration
	var peak float64
	for i := range b.N {
		// 1% of the pods change while the informer is down, each
		// iteration a generation of its own.
		w, err := informerbench.WarmRestart(benchContext(b), proc, n, opts, withHandler, n/100, 1000+i)
		if err != nil {
			b.Fatal(err)
		}
		total += w.Duration
		cpu += w.CPU
		peak = w.Heap.Peak
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(peak/float64(n), "peak-heap-bytes/obj")
}
