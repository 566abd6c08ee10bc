package scalebench

import (
	"context"
	"runtime/debug"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
)

// Phase is what one measured phase of an informer process cost.
type Phase struct {
	// Name is the phase: cold, steady, relist, warm-replay,
	// warm-no-handler, factory-cold, factory-steady, factory-warm,
	// factory-warm-one.
	Name string `json:"name"`
	// Impl is the informer measured: bolt, client-go or factory.
	Impl string `json:"impl"`
	// N is the number of objects.
	N int `json:"n"`
	// Resource names the one resource of a factory-warm-one phase.
	Resource string `json:"resource,omitempty"`
	// Informers is the number of the factory's informers that synced, 0
	// outside the factory's phases.
	Informers int `json:"informers,omitempty"`
	// MemoryBudget is the factory's memory budget in bytes
	// (factory.Options.MemoryBudget), 0 for none; ListSlots the relists
	// and replays its list gate admits at once (Factory.ListGate), 0
	// without a gate; QueueBudget the objects its informers' queues hold
	// together (Factory.QueueBudget), 0 without a shared budget.
	MemoryBudget int64 `json:"memoryBudget,omitempty"`
	ListSlots    int   `json:"listSlots,omitempty"`
	QueueBudget  int   `json:"queueBudget,omitempty"`
	// Seconds and CPUSeconds are the phase's wall-clock time and the
	// informer process's CPU time.
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// Events is the number of notifications the phase waited for (adds,
	// or updates for steady and relist).
	Events int `json:"events"`
	// AnonPeak and FilePeak are the largest anonymous and file-backed
	// resident memory sampled (every 10 ms) during the phase; AnonEnd the
	// anonymous memory at its end.
	AnonPeak uint64 `json:"anonPeak"`
	FilePeak uint64 `json:"filePeak"`
	AnonEnd  uint64 `json:"anonEnd"`
	// HWM is the process's peak resident set (anonymous and file-backed)
	// since it started, as the kernel recorded it, at the phase's end.
	HWM uint64 `json:"hwm"`
	// HeapPeak is the largest Go heap (live and garbage) sampled during
	// the phase; HeapSettled the live heap after it.
	HeapPeak    uint64 `json:"heapPeak"`
	HeapSettled uint64 `json:"heapSettled"`
	// MemLimit is the process's Go memory limit (GOMEMLIMIT), 0 if none.
	MemLimit int64 `json:"memLimit"`
	// CgroupPeak is the cgroup's peak memory charge (anonymous and page
	// cache) over the process's life, 0 without a cgroup; set by the
	// parent.
	CgroupPeak uint64 `json:"cgroupPeak,omitempty"`
	// CgroupOOM is the number of OOM kills in the cgroup; set by the
	// parent.
	CgroupOOM int `json:"cgroupOOM,omitempty"`
}

// meter measures one phase: time, CPU, resident memory and heap.
type meter struct {
	rss  *procmem.Sampler
	heap *measure.PeakSampler
	sw   measure.Stopwatch
}

func startMeter(rss *procmem.Sampler) *meter {
	m := &meter{rss: rss}
	rss.Reset()
	m.heap = measure.StartPeak(0)
	m.sw.StartTimer()
	return m
}

// stop ends the phase and returns its figures, then runs the collector to
// read the live heap after the phase (which the phase's other figures do
// not include).
func (m *meter) stop(name, impl string, n, events int) Phase {
	m.sw.StopTimer()
	p := Phase{Name: name, Impl: impl, N: n, Events: events, Seconds: m.sw.Elapsed().Seconds(), CPUSeconds: m.sw.CPU().Seconds()}
	p.HeapPeak = m.heap.Stop()
	peak, last := m.rss.Peak()
	p.AnonPeak, p.FilePeak, p.AnonEnd, p.HWM = peak.Anon, peak.File, last.Anon, last.HWM
	p.HeapSettled = measure.SettledHeap()
	if l := debug.SetMemoryLimit(-1); l != 1<<63-1 {
		p.MemLimit = l
	}
	return p
}

// waitCtx waits for ch or ctx's end.
func waitCtx(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
