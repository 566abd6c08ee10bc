package measure

import (
	"runtime/metrics"
	"time"
)

// GC is a reading of the garbage collector's counters: what a phase cost
// in collections is the difference of two readings (Sub).
type GC struct {
	// Cycles counts completed collection cycles, forced ones included.
	Cycles uint64
	// Allocs counts the bytes allocated on the heap.
	Allocs uint64
	// CPU is the runtime's estimate of the CPU time spent collecting,
	// assists by allocating goroutines included. It is an overestimate,
	// meant for comparison with other estimates of the runtime's (its
	// total being about GOMAXPROCS times the wall-clock time), but it
	// tells one collection's cost from another's.
	CPU time.Duration
}

// The runtime/metrics names of GC's counters.
const (
	gcCyclesMetric = "/gc/cycles/total:gc-cycles"
	gcAllocsMetric = "/gc/heap/allocs:bytes"
	gcCPUMetric    = "/cpu/classes/gc/total:cpu-seconds"
)

// ReadGC returns the counters now. It does not stop the world.
func ReadGC() GC {
	s := []metrics.Sample{{Name: gcCyclesMetric}, {Name: gcAllocsMetric}, {Name: gcCPUMetric}}
	metrics.Read(s)
	var g GC
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.Cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		g.Allocs = s[1].Value.Uint64()
	}
	if s[2].Value.Kind() == metrics.KindFloat64 {
		g.CPU = time.Duration(s[2].Value.Float64() * float64(time.Second))
	}
	return g
}

// Sub returns the counts from before to g.
func (g GC) Sub(before GC) GC {
	return GC{Cycles: g.Cycles - before.Cycles, Allocs: g.Allocs - before.Allocs, CPU: g.CPU - before.CPU}
}
