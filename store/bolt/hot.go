package bolt

import (
	"hash/maphash"
	"strings"
	"sync"
)

// hotTier is the hot tier: a least-recently-used cache of decoded objects
// bounded in bytes, so that repeated point reads of the same objects (a
// controller's lister Get after an event) skip the decoding, which is most
// of a read's cost (see doc.go). One tier serves every store of a DB that
// does not have its own (ResourceOptions.HotBytes), under one budget.
//
// An entry is valid while the item's stored envelope is byte for byte the
// one its object was decoded (or encoded) from: entries are checked
// against a hash of the envelope read in the same transaction as the
// lookup, so writes, relists and other processes never need to invalidate
// anything, and a stale entry is never returned (short of a 64-bit hash
// collision on the same key).
//
// Cached objects are shared by every caller that reads them: the store
// never mutates them, and callers must not either (store.Store's
// ownership rule, as in client-go).
type hotTier struct {
	seed   maphash.Seed
	budget int64 // bytes, > 0

	// mu guards used, the parts' maps and the list.
	mu   sync.Mutex
	used int64    // estimated bytes of the cached objects
	lru  hotEntry // sentinel: lru.next is the most recently used
}

// hotPart is one store's share of a hotTier: its entries and metrics. A
// nil *hotPart is valid and caches nothing.
type hotPart struct {
	tier *hotTier
	// factor estimates a decoded object's heap bytes from its envelope's
	// length (see costFactor).
	factor  float64
	metrics hotMetrics
	// m holds the store's entries by item key; guarded by tier.mu.
	m map[string]*hotEntry
}

type hotEntry struct {
	part       *hotPart
	key        string
	sum        uint64
	obj        interface{}
	cost       int64
	prev, next *hotEntry
}

// hotEntryOverhead is the bytes an entry costs beyond its object and key:
// the entry, its map slot and list links.
const hotEntryOverhead = 160

// newHotTier returns a tier of budget bytes, or nil (no tier) for
// budget <= 0.
func newHotTier(budget int64) *hotTier {
	if budget <= 0 {
		return nil
	}
	t := &hotTier{seed: maphash.MakeSeed(), budget: budget}
	t.lru.next, t.lru.prev = &t.lru, &t.lru
	return t
}

// part returns a new part of t for a store whose codec is named codecName,
// or nil if t is nil.
func (t *hotTier) part(codecName string, m hotMetrics) *hotPart {
	if t == nil {
		return nil
	}
	return &hotPart{tier: t, factor: costFactor(codecName), metrics: m, m: map[string]*hotEntry{}}
}

// costFactor is the ratio of a decoded object's Go heap to its envelope's
// length, measured on podgen pods (decode 2,000, compare HeapAlloc after a
// GC): 2.25 for the protobuf codec, 0.95 for JSON into typed objects, 5.5
// for unstructured objects (maps of interfaces). Another codec counts 3.
func costFactor(codecName string) float64 {
	switch {
	case strings.HasPrefix(codecName, "protobuf"):
		return 2.25
	case strings.HasPrefix(codecName, "json"):
		return 1
	case strings.HasPrefix(codecName, "unstructured"):
		return 5.5
	}
	return 3
}

// sum returns the hash of an envelope.
func (p *hotPart) sum(env []byte) uint64 {
	return maphash.Bytes(p.tier.seed, env)
}

// cost estimates the bytes an entry for key with an envelope of envLen
// bytes holds.
func (p *hotPart) cost(key string, envLen int) int64 {
	return int64(float64(envLen)*p.factor) + int64(len(key)) + hotEntryOverhead
}

// get returns the object cached for key if it was decoded from an envelope
// with hash sum, and counts a hit or a miss: for point reads.
func (p *hotPart) get(key []byte, sum uint64) (interface{}, bool) {
	if p == nil {
		return nil, false
	}
	t := p.tier
	t.mu.Lock()
	e, ok := p.m[string(key)]
	if ok && e.sum == sum {
		t.unlinkLocked(e)
		t.pushFrontLocked(e)
		t.mu.Unlock()
		p.metrics.hits.Inc()
		return e.obj, true
	}
	t.mu.Unlock()
	p.metrics.misses.Inc()
	return nil, false
}

// peek is get without marking the entry as recently used and without
// counting: for bulk reads and writers, whose reads must not decide what
// the tier keeps.
func (p *hotPart) peek(key []byte, sum uint64) (interface{}, bool) {
	if p == nil {
		return nil, false
	}
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	if e, ok := p.m[string(key)]; ok && e.sum == sum {
		return e.obj, true
	}
	return nil, false
}

// put caches obj, decoded from or encoded to an envelope of envLen bytes
// with hash sum, under key, evicting the least recently used entries of
// the tier (of any store) beyond its budget. An object larger than the
// whole budget is not cached (and an older entry for key is dropped).
func (p *hotPart) put(key string, sum uint64, envLen int, obj interface{}) {
	if p == nil {
		return
	}
	t := p.tier
	cost := p.cost(key, envLen)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := p.m[key]; ok {
		t.removeLocked(e)
	}
	if cost > t.budget {
		return
	}
	e := &hotEntry{part: p, key: key, sum: sum, obj: obj, cost: cost}
	p.m[key] = e
	t.pushFrontLocked(e)
	t.used += cost
	p.metrics.bytes.Add(float64(cost))
	p.metrics.entries.Inc()
	for t.used > t.budget {
		last := t.lru.prev
		t.removeLocked(last)
		last.part.metrics.evictions.Inc()
	}
}

// clear removes p's entries (its store closes).
func (p *hotPart) clear() {
	if p == nil {
		return
	}
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	for _, e := range p.m {
		p.tier.removeLocked(e)
	}
}

// removeLocked drops e from the tier. t.mu must be held.
func (t *hotTier) removeLocked(e *hotEntry) {
	t.unlinkLocked(e)
	delete(e.part.m, e.key)
	t.used -= e.cost
	e.part.metrics.bytes.Sub(float64(e.cost))
	e.part.metrics.entries.Dec()
}

func (t *hotTier) unlinkLocked(e *hotEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (t *hotTier) pushFrontLocked(e *hotEntry) {
	e.prev, e.next = &t.lru, t.lru.next
	t.lru.next.prev = e
	t.lru.next = e
}
