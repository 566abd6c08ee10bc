package measure

import "runtime/metrics"

// GC is a reading of the garbage collector's counters: what a phase cost
// in collections is the difference of two readings (Sub).
type GC struct {
	// Cycles counts completed collection cycles, forced ones included.
	Cycles uint64
	// Allocs counts the bytes allocated on the heap.
	Allocs uint64
}

// The runtime/metrics names of GC's counters.
const (
	gcCyclesMetric = "/gc/cycles/total:gc-cycles"
	gcAllocsMetric = "/gc/heap/allocs:bytes"
)

// ReadGC returns the counters now. It does not stop the world.
func ReadGC() GC {
	s := []metrics.Sample{{Name: gcCyclesMetric}, {Name: gcAllocsMetric}}
	metrics.Read(s)
	var g GC
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.Cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		g.Allocs = s[1].Value.Uint64()
	}
	return g
}

// Sub returns the counts from before to g.
func (g GC) Sub(before GC) GC {
	return GC{Cycles: g.Cycles - before.Cycles, Allocs: g.Allocs - before.Allocs}
}
