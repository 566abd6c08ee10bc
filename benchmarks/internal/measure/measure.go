// Package measure holds the measuring tools warmcache's benchmarks share:
// the settled Go heap, a peak-heap sampler, latency percentiles and the
// text tables the benchmark programs print.
package measure

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// SettledHeap runs the garbage collector twice (the second cycle frees what
// finalizers and sweeping released in the first) and returns the bytes of
// live heap objects (runtime.MemStats.HeapAlloc). The difference of two
// calls, with a data structure built in between, is that structure's heap
// footprint, provided nothing else allocated and kept memory meanwhile.
func SettledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapObjectsMetric is runtime/metrics' name for HeapAlloc: the bytes of
// heap objects, live or not yet swept. Reading it does not stop the world,
// unlike runtime.ReadMemStats.
const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// HeapObjects returns the bytes of heap objects now, garbage not yet
// collected included (runtime.MemStats.HeapAlloc).
func HeapObjects() uint64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// DefaultPeakInterval is the sampling interval of StartPeak with a
// non-positive interval.
const DefaultPeakInterval = 10 * time.Millisecond

// PeakSampler records the largest HeapObjects value seen while it runs.
// Its methods are safe for concurrent use.
type PeakSampler struct {
	loop *Periodic

	// mu guards peak and samples.
	mu      sync.Mutex
	peak    uint64
	samples int
}

// StartPeak starts sampling the heap every interval (DefaultPeakInterval if
// interval is not positive) in a goroutine, until Stop. It takes the first
// sample before it returns.
func StartPeak(interval time.Duration) *PeakSampler {
	if interval <= 0 {
		interval = DefaultPeakInterval
	}
	p := &PeakSampler{}
	p.sample()
	p.loop = Every(interval, p.sample)
	return p
}

func (p *PeakSampler) sample() {
	v := HeapObjects()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples++
	if v > p.peak {
		p.peak = v
	}
}

// Peak returns the largest value seen so far and the number of samples.
func (p *PeakSampler) Peak() (bytes uint64, samples int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak, p.samples
}

// Stop takes a last sample, ends the sampling goroutine and returns the
// peak. Calling it more than once returns the same peak.
func (p *PeakSampler) Stop() uint64 {
	if p.loop.Stop() {
		p.sample()
	}
	peak, _ := p.Peak()
	return peak
}
