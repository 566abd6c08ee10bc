// Package headroom lends the garbage collector room while a store decodes
// a long stream of objects it does not keep, such as a warm start's replay
// of a whole resource to its handlers.
//
// Such a stream allocates gigabytes, garbage once handed over, while the
// live heap stays small (the store keeps its objects on disk), so with the
// default GOGC the collector runs every few tens of megabytes allocated,
// where client-go's cold sync, whose heap grows with what it keeps, runs a
// dozen times in all. A lend holds a ballast, one pointer-free allocation
// that is never written: the collector counts it in the live heap, so it
// lets that much more garbage build up between cycles, but never scans it,
// and its pages, fresh from the operating system, are not resident. The
// garbage that fills the room is: a lend costs up to its size in resident
// memory while it is open, which the runtime's scavenger returns to the
// system after.
//
// The ballast is one for the process: lends that overlap share it, sized
// to the largest of them. A lend is capped to a sixteenth of the memory
// limit (GOMEMLIMIT, debug.SetMemoryLimit), which the ballast counts
// against, and is not made at all with the collector off (GOGC=off).
package headroom

import (
	"math"
	"runtime/metrics"
	"sync"
)

var (
	mu      sync.Mutex
	open    = map[uint64]int64{} // open lends by id, their sizes
	nextID  uint64
	ballast []byte // held for the collector's pacing only
)

// Lend holds a ballast of up to n bytes (see the package doc) until the
// returned release is called; release may be called more than once. A
// lend of n <= 0, or one the settings of the collector leave no room for,
// does nothing.
func Lend(n int64) (release func()) {
	n = fit(n)
	if n <= 0 {
		return func() {}
	}
	mu.Lock()
	id := nextID
	nextID++
	open[id] = n
	resizeLocked()
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			delete(open, id)
			resizeLocked()
			mu.Unlock()
		})
	}
}

// Size returns the size of the ballast held now.
func Size() int64 {
	mu.Lock()
	defer mu.Unlock()
	return int64(len(ballast))
}

// resizeLocked makes the ballast the largest open lend: it grows when a
// larger lend opens and goes when the last one closes. It does not shrink
// in between, which would cost an allocation for room that is about to
// be given back anyway.
func resizeLocked() {
	var want int64
	for _, n := range open {
		want = max(want, n)
	}
	switch {
	case want == 0:
		ballast = nil
	case want > int64(len(ballast)):
		ballast = nil // let the smaller one go before the larger exists
		ballast = make([]byte, want)
	}
}

// fit caps n to what the collector's settings leave room for.
func fit(n int64) int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 && int64(s[0].Value.Uint64()) < 0 {
		return 0 // GOGC=off: only the memory limit runs the collector
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		if limit := s[1].Value.Uint64(); limit < math.MaxInt64 {
			n = min(n, int64(limit/16))
		}
	}
	return n
}
