package measure

import (
	"math"
	"slices"
	"time"
)

// Latencies collects durations of individual operations. It is not safe for
// concurrent use.
type Latencies struct {
	d      []time.Duration
	sorted bool
}

// NewLatencies returns an empty collection with room for n samples.
func NewLatencies(n int) *Latencies {
	return &Latencies{d: make([]time.Duration, 0, n)}
}

// Add records one sample.
func (l *Latencies) Add(d time.Duration) {
	l.d = append(l.d, d)
	l.sorted = false
}

// Len returns the number of samples.
func (l *Latencies) Len() int { return len(l.d) }

// Percentile returns the p-th percentile (0 < p <= 100) by the
// nearest-rank method: the smallest sample such that at least p percent of
// the samples are at most it. It returns 0 without samples; p outside
// (0, 100] is clamped into it.
func (l *Latencies) Percentile(p float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	if !l.sorted {
		slices.Sort(l.d)
		l.sorted = true
	}
	rank := int(math.Ceil(float64(len(l.d)) * p / 100))
	rank = min(max(rank, 1), len(l.d))
	return l.d[rank-1]
}

// Micros converts d to microseconds as a float, the unit the benchmarks
// report latencies in.
func Micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// PerSecond returns how many of n things per second took d; 0 for a
// non-positive d.
func PerSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// SpreadStride returns a stride near n/phi that is coprime with n, so that
// the k-th of n steps visiting object (k*stride) mod n visits every object
// once, spread over the whole range rather than in order.
func SpreadStride(n int) int {
	s := max(int(float64(n)*0.6180339887), 1)
	for gcd(s, n) != 1 {
		s++
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
