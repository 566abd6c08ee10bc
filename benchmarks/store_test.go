package benchmarks

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
)

// envSizes names the environment variable holding the benchmark sizes.
const envSizes = "WARMCACHE_BENCH_N"

// benchSizes returns the sizes to benchmark: WARMCACHE_BENCH_N, a
// comma-separated list of positive integers, or 10000.
func benchSizes(b *testing.B) []int {
	v := strings.TrimSpace(os.Getenv(envSizes))
	if v == "" {
		return []int{10000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a comma-separated list of positive integers", envSizes, v)
		}
		out = append(out, n)
	}
	return out
}

// corpora caches the corpus of the size benchmarked last: generating pods
// is slow, and holding more than one size would waste memory.
var corpora struct {
	sync.Mutex
	n int
	c *storebench.Corpus
}

func corpus(b *testing.B, n int) *storebench.Corpus {
	b.Helper()
	corpora.Lock()
	defer corpora.Unlock()
	if corpora.n != n {
		corpora.c, corpora.n = nil, 0
		c, err := storebench.NewCorpus(n)
		if err != nil {
			b.Fatal(err)
		}
		corpora.c, corpora.n = c, n
	}
	return corpora.c
}

// storeOp is one operation of BenchmarkStore. Each iteration is a whole
// unit of work (a full load, a set of lookups), so that -benchtime 1x
// gives meaningful figures; the custom metrics are the figures to read.
type storeOp struct {
	name string
	run  func(b *testing.B, impl string, c *storebench.Corpus, n int)
}

var storeOps = []storeOp{
	{"heap", benchHeap},
	{"add", benchAdd},
	{"update", benchUpdate},
	{"get", benchGet},
	{"byindex", benchByIndex},
	{"replace", benchReplace},
}

// BenchmarkStore compares client-go's cache.NewIndexer with warmcache's
// memory and bolt stores; see the package documentation.
func BenchmarkStore(b *testing.B) {
	sizes := benchSizes(b)
	for _, impl := range storebench.Impls {
		b.Run(impl, func(b *testing.B) {
			for _, op := range storeOps {
				b.Run(op.name, func(b *testing.B) {
					for _, n := range sizes {
						b.Run(strconv.Itoa(n), func(b *testing.B) {
							op.run(b, impl, corpus(b, n), n)
						})
					}
				})
			}
		})
	}
}

func openTarget(b *testing.B, impl string) *storebench.Target {
	b.Helper()
	t, err := storebench.Open(context.Background(), impl, storebench.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := t.Close(); err != nil {
			b.Error(err)
		}
	})
	return t
}

// filled returns a target holding pods 0..n-1, with the timer stopped and
// reset.
func filled(b *testing.B, impl string, c *storebench.Corpus, n int) *storebench.Target {
	b.Helper()
	b.StopTimer()
	t := openTarget(b, impl)
	if err := storebench.Load(context.Background(), t, c, n, b); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	return t
}

// benchHeap: each iteration loads n pods into a new store; heap-bytes/obj
// is the settled Go heap it holds per pod (the last iteration's), and the
// timer measures the writes.
func benchHeap(b *testing.B, impl string, c *storebench.Corpus, n int) {
	b.StopTimer()
	var perObj, filePerObj float64
	for range b.N {
		before := measure.SettledHeap()
		t := openTarget(b, impl)
		if err := storebench.Load(context.Background(), t, c, n, b); err != nil {
			b.Fatal(err)
		}
		after := measure.SettledHeap()
		perObj = (float64(after) - float64(before)) / float64(n)
		size, err := t.FileBytes()
		if err != nil {
			b.Fatal(err)
		}
		filePerObj = float64(size) / float64(n)
		if err := t.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(perObj, "heap-bytes/obj")
	if impl == storebench.Bolt {
		b.ReportMetric(filePerObj, "file-bytes/obj")
	}
}

// cpuTimer is b's timer that also measures the process's CPU time.
type cpuTimer struct {
	b  *testing.B
	sw measure.Stopwatch
}

func (t *cpuTimer) StartTimer() { t.b.StartTimer(); t.sw.StartTimer() }
func (t *cpuTimer) StopTimer()  { t.sw.StopTimer(); t.b.StopTimer() }

// report reports the CPU time per pod written, if known.
func (t *cpuTimer) report(pods int) {
	if _, ok := measure.ProcessCPU(); ok {
		t.b.ReportMetric(measure.Micros(t.sw.CPU())/float64(pods), "cpu-µs/pod")
	}
}

// benchAdd: each iteration loads n pods into a new store in batches; the
// timer runs during the writes only.
func benchAdd(b *testing.B, impl string, c *storebench.Corpus, n int) {
	b.StopTimer()
	tm := &cpuTimer{b: b}
	for range b.N {
		t := openTarget(b, impl)
		if err := storebench.Load(context.Background(), t, c, n, tm); err != nil {
			b.Fatal(err)
		}
		if err := t.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(measure.PerSecond(n*b.N, b.Elapsed()), "pods/s")
	tm.report(n * b.N)
}

// updatesPerOp is the number of updates one iteration of the update
// benchmark applies.
func updatesPerOp(n int) int { return min(n, 5000) }

// benchUpdate: each iteration updates updatesPerOp(n) pods spread over a
// store holding n, in batches.
func benchUpdate(b *testing.B, impl string, c *storebench.Corpus, n int) {
	t := filled(b, impl, c, n)
	m := updatesPerOp(n)
	tm := &cpuTimer{b: b}
	for i := range b.N {
		if err := storebench.Update(context.Background(), t, c, n, m, i+1, tm); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(measure.PerSecond(m*b.N, b.Elapsed()), "pods/s")
	tm.report(m * b.N)
}

// Lookups per iteration of the get and byindex benchmarks.
const (
	getsPerOp    = 2000
	byIndexPerOp = 10
)

func reportLatencies(b *testing.B, lat *measure.Latencies) {
	b.ReportMetric(measure.Micros(lat.Percentile(50)), "p50-µs")
	b.ReportMetric(measure.Micros(lat.Percentile(99)), "p99-µs")
}

// benchGet: each iteration looks up getsPerOp random keys.
func benchGet(b *testing.B, impl string, c *storebench.Corpus, n int) {
	t := filled(b, impl, c, n)
	rng := rand.New(rand.NewPCG(1, 0))
	lat := measure.NewLatencies(getsPerOp * b.N)
	for range b.N {
		if err := storebench.GetByKey(t, c, n, getsPerOp, rng, lat, b); err != nil {
			b.Fatal(err)
		}
	}
	reportLatencies(b, lat)
}

// benchByIndex: each iteration lists byIndexPerOp random namespaces
// through the namespace index.
func benchByIndex(b *testing.B, impl string, c *storebench.Corpus, n int) {
	t := filled(b, impl, c, n)
	rng := rand.New(rand.NewPCG(1, 0))
	lat := measure.NewLatencies(byIndexPerOp * b.N)
	for range b.N {
		if err := storebench.ByNamespace(t, c, n, byIndexPerOp, rng, lat, b); err != nil {
			b.Fatal(err)
		}
	}
	reportLatencies(b, lat)
}

// benchReplace: each iteration replaces the n pods of the store with new
// versions of them.
func benchReplace(b *testing.B, impl string, c *storebench.Corpus, n int) {
	t := filled(b, impl, c, n)
	for i := range b.N {
		if err := storebench.Replace(context.Background(), t, c, n, i+1, b); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(measure.PerSecond(n*b.N, b.Elapsed()), "pods/s")
}
