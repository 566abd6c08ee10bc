package informer

import "hash/maphash"

// keyFilter is a set of keys that may answer "maybe" for a key it does not
// hold (under 1% of the time) but never "no" for one it holds: a scalable
// Bloom filter, a series of filters each twice the capacity of the one
// before, so that it needs no size up front and holds about 4 bytes per
// key (16 bits per key and filter, the series summing to twice the keys).
// A fill uses it to tell a key it already wrote, which a list should never
// repeat, from the others without a store read per key.
type keyFilter struct {
	seed  maphash.Seed
	parts []*bloom
}

// bloom is one filter of the series.
type bloom struct {
	bits     []uint64
	capacity int // keys it takes before the series grows
	n        int
}

const (
	keyFilterFirst  = 1024 // the first filter's capacity, in keys
	keyFilterBits   = 16   // bits per key of capacity
	keyFilterHashes = 11   // about 0.05% false positives per filter at capacity
)

func newKeyFilter() *keyFilter { return &keyFilter{seed: maphash.MakeSeed()} }

// add records key and reports whether the filter may already have held
// it (always true when it did).
func (f *keyFilter) add(key string) (maybeHeld bool) {
	h := maphash.String(f.seed, key)
	for _, b := range f.parts {
		if b.has(h) {
			maybeHeld = true
			break
		}
	}
	last := len(f.parts) - 1
	if last < 0 || f.parts[last].n >= f.parts[last].capacity {
		capacity := keyFilterFirst
		if last >= 0 {
			capacity = 2 * f.parts[last].capacity
		}
		f.parts = append(f.parts, &bloom{bits: make([]uint64, (capacity*keyFilterBits+63)/64), capacity: capacity})
		last++
	}
	f.parts[last].put(h)
	return maybeHeld
}

// indexes calls fn with each of the filter's bit positions for h (double
// hashing: h1 + i*h2).
func (b *bloom) indexes(h uint64, fn func(i uint64) bool) bool {
	m := uint64(len(b.bits) * 64)
	h1, h2 := h, h>>32|1
	for i := uint64(0); i < keyFilterHashes; i++ {
		if !fn((h1 + i*h2) % m) {
			return false
		}
	}
	return true
}

func (b *bloom) has(h uint64) bool {
	return b.indexes(h, func(i uint64) bool { return b.bits[i/64]&(1<<(i%64)) != 0 })
}

func (b *bloom) put(h uint64) {
	b.indexes(h, func(i uint64) bool { b.bits[i/64] |= 1 << (i % 64); return true })
	b.n++
}
