package bolt

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// hotTier is the hot tier: a least-recently-used cache of decoded objects
// bounded in bytes, so that repeated point reads of the same objects (a
// controller's lister Get after an event) skip the decoding, which is most
// of a read's cost (see doc.go). One tier serves every store of a DB that
// does not have its own (ResourceOptions.HotBytes), under one budget.
//
// An entry is valid while the item's stored envelope is byte for byte the
// one its object was decoded (or encoded) from. Two checks keep it so:
//
//   - Reads that open a transaction anyway (bulk reads, writers' reads)
//     check an entry against the envelope read in that transaction: its
//     checksum (a CRC-32C of its bytes, which the read verified anyway,
//     see layout.EnvelopeOf) and a hash of its resourceVersion, so the
//     check reads 4 bytes and hashes the few of the resourceVersion
//     instead of hashing the envelope. A stale object would take another
//     envelope for the same key with the same resourceVersion (the
//     apiserver gives every write a new one) and the same CRC-32C.
//   - A point read needs no transaction for a "fast" entry: one put by the
//     store's own write (commit), or by a read or hash check that no write
//     followed before the entry was put (seq), while no other write has
//     touched the file since (the DB's epoch, bumped after every write
//     transaction but the store's own batches, which update the tier
//     themselves: a relist's commit, an index rebuild, another resource's
//     relist). No other process writes the file meanwhile: a read-write
//     DB holds an exclusive lock on it, and a writer that finds the file
//     held by read-only DBs writes a copy instead, never their file
//     (lock.go).
//
// Cached objects are shared by every caller that reads them: the store
// never mutates them, and callers must not either (store.Store's
// ownership rule, as in client-go).
//
// Two segments share the budget, as in the 2Q and ARC policies. An
// object a write puts enters probation; an entry moves to the main
// segment when a point read finds it, or when the object is written again
// while cached or soon after it left probation (the keys probation
// evicted are remembered, hashed, in a ring of their own, the ghosts,
// until they enter the main segment); an object a point read decoded
// enters the main segment directly. Eviction
// takes probation's least recently used entry while probation is over its
// share (but never its newest entry), then the main segment's while the
// tier is over its budget.
//
// Probation's share adapts to the readers, between a sixteenth of the
// budget and all of it (half to begin with): a point read that misses an
// object probation evicted grows it by that object's cost (the readers
// come later than probation keeps writes: a controller's reconcile lags
// its events), and each eviction from probation shrinks it by an eighth
// of the evicted object's cost. Writes that nothing reads, over many
// objects each written seldom (a churn spread over a large cluster), thus
// keep a sixteenth of the budget alive instead of all of it; the
// collector marks every cached object at each of its cycles, and marking
// 32 MiB of decoded pods cost such a churn about 12 µs per update
// (informerbench, 100k pods, the informer's queue at 1,000), a tenth of
// its CPU.
type hotTier struct {
	seed   maphash.Seed
	budget int64 // bytes, > 0
	// probBudget is probation's share of budget, which adapts between
	// probMin and budget (guarded by mu).
	probBudget int64
	// parts numbers the parts (hotPart.id).
	parts atomic.Uint64

	// mu guards used, probUsed, the parts' maps and seqs, the lists and
	// the ghosts. Lock order: Store.mu, then mu; mu is never held across
	// a transaction or a decode.
	mu       sync.Mutex
	used     int64    // estimated bytes of the cached objects
	probUsed int64    // the part of used in probation
	lru      hotEntry // main segment's sentinel: lru.next is the most recently used
	prob     hotEntry // probation's sentinel, the same
	ghosts   hotGhosts
}

// hotPart is one store's share of a hotTier: its entries and metrics. A
// nil *hotPart is valid and caches nothing.
type hotPart struct {
	tier *hotTier
	// id tells the part's keys apart from other parts' among the ghosts.
	id uint64
	// factor estimates a decoded object's heap bytes from its envelope's
	// length (see costFactor).
	factor  float64
	metrics hotMetrics
	// epoch is the DB's write epoch (DB.hotEpoch).
	epoch *atomic.Uint64
	// m holds the store's entries by item key and seq counts the store's
	// commits; guarded by tier.mu.
	m   map[string]*hotEntry
	seq uint64
}

// hotStamp is what a point read saw before its transaction began: an
// entry it puts is fast only if neither changed before the put.
type hotStamp struct {
	epoch, seq uint64
}

type hotEntry struct {
	part       *hotPart
	key        string
	sum        uint64
	obj        interface{}
	cost       int64
	prev, next *hotEntry
	// fast: the entry may be returned without reading the envelope while
	// epoch is the DB's.
	fast  bool
	epoch uint64
	// prob: the entry is in probation.
	prob bool
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
	t := &hotTier{seed: maphash.MakeSeed(), budget: budget, probBudget: budget / 2}
	t.lru.next, t.lru.prev = &t.lru, &t.lru
	t.prob.next, t.prob.prev = &t.prob, &t.prob
	t.ghosts.init(int(max(budget/hotGhostBytes, 64)))
	return t
}

// part returns a new part of t for a store whose codec is named codecName,
// or nil if t is nil.
func (t *hotTier) part(codecName string, m hotMetrics, epoch *atomic.Uint64) *hotPart {
	if t == nil {
		return nil
	}
	return &hotPart{tier: t, id: t.parts.Add(1), factor: costFactor(codecName), metrics: m, epoch: epoch, m: map[string]*hotEntry{}}
}

// stamp returns what a point read must record before its transaction.
func (p *hotPart) stamp() hotStamp {
	epoch := p.epoch.Load()
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	return hotStamp{epoch: epoch, seq: p.seq}
}

// fast returns the object of a fast entry for key, valid without reading
// the file, and counts a hit; ok is false (nothing counted) otherwise, and
// st is then the stamp the point read records before its transaction,
// taken under the same lock (see stamp).
func (p *hotPart) fast(key string) (obj interface{}, ok bool, st hotStamp) {
	if p == nil {
		return nil, false, hotStamp{}
	}
	t := p.tier
	epoch := p.epoch.Load()
	t.mu.Lock()
	e, found := p.m[key]
	if !found || !e.fast || e.epoch != epoch {
		st = hotStamp{epoch: epoch, seq: p.seq}
		t.mu.Unlock()
		return nil, false, st
	}
	t.promoteLocked(e)
	t.mu.Unlock()
	p.metrics.hits.Inc()
	return e.obj, true, hotStamp{}
}

// committed updates the tier after the store's commit of ops: their
// objects become fast entries (in probation unless written again soon,
// see hotTier), deleted keys leave, and entries put by reads that began
// before the commit are not fast. The store's write lock must be held.
func (p *hotPart) committed(ops []prepared) {
	if p == nil {
		return
	}
	t := p.tier
	epoch := p.epoch.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	p.seq++
	for i := range ops {
		op := &ops[i]
		if op.delete {
			if e, ok := p.m[op.key]; ok {
				t.removeLocked(e)
			}
			continue
		}
		prob := false
		if _, cached := p.m[op.key]; !cached {
			// Written again soon after probation evicted it: into the
			// main segment, and out of the ghosts.
			prob = !t.ghosts.take(p.ghost(op.key))
		}
		p.putLocked(op.key, op.sum, len(op.env), op.obj, true, epoch, prob)
	}
}

// costFactor is the ratio of a decoded object's Go heap to its envelope's
// length, measured on podgen pods (decode 2,000, compare HeapAlloc after a
// GC): 2.25 for the protobuf codec, 0.95 for JSON into typed objects, 5.5
// for unstructured objects (maps of interfaces). Another codec counts 3.
func costFactor(codecName string) float64 {
	// A wrapping codec's name ends with the wrapped one's
	// (store/seal: "sealed-aes256gcm+protobuf").
	if i := strings.LastIndexByte(codecName, '+'); i >= 0 {
		codecName = codecName[i+1:]
	}
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

// sum returns what identifies the bytes of an envelope whose checksum was
// verified (or just written): the checksum, and a hash of the
// resourceVersion.
func (p *hotPart) sum(env []byte) uint64 {
	rv, _ := layout.EnvelopeRVBytes(env)
	return uint64(layout.EnvelopeSum(env))<<32 | uint64(uint32(maphash.Bytes(p.tier.seed, rv)))
}

// cost estimates the bytes an entry for key with an envelope of envLen
// bytes holds.
func (p *hotPart) cost(key string, envLen int) int64 {
	return int64(float64(envLen)*p.factor) + int64(len(key)) + hotEntryOverhead
}

// get returns the object cached for key if it was decoded from an envelope
// with hash sum, and counts a hit or a miss: for point reads, whose
// transaction began after st. A hit makes the entry fast if nothing was
// written since st.
func (p *hotPart) get(key []byte, sum uint64, st hotStamp) (interface{}, bool) {
	if p == nil {
		return nil, false
	}
	t := p.tier
	t.mu.Lock()
	e, ok := p.m[string(key)]
	if ok && e.sum == sum {
		t.promoteLocked(e)
		e.fast, e.epoch = st.seq == p.seq, st.epoch
		t.mu.Unlock()
		p.metrics.hits.Inc()
		return e.obj, true
	}
	t.mu.Unlock()
	p.metrics.misses.Inc()
	return nil, false
}

// peek is get of the object decoded from envelope env (verified by the
// read) without marking the entry as recently used and without counting:
// for bulk reads and writers, whose reads must not decide what the tier
// keeps.
func (p *hotPart) peek(key, env []byte) (interface{}, bool) {
	if p == nil {
		return nil, false
	}
	sum := p.sum(env)
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	if e, ok := p.m[string(key)]; ok && e.sum == sum {
		return e.obj, true
	}
	return nil, false
}

// put caches obj, decoded by a point read whose transaction began after
// st from an envelope of envLen bytes with hash sum, under key, in the
// main segment.
func (p *hotPart) put(key string, sum uint64, envLen int, obj interface{}, st hotStamp) {
	if p == nil {
		return
	}
	t := p.tier
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ghosts.take(p.ghost(key)) {
		// Probation evicted what a reader wanted: keep writes longer.
		// The key leaves the ghosts for the main segment, so that a
		// miss after the main segment evicted it does not count.
		t.probBudget = min(t.budget, t.probBudget+p.cost(key, envLen))
	}
	p.putLocked(key, sum, envLen, obj, st.seq == p.seq, st.epoch, false)
}

// putLocked caches obj under key, in probation if prob, evicting the
// least recently used entries beyond probation's share and the tier's
// budget (of any store; see hotTier). An object larger than the whole
// budget is not cached (and an older entry for key is dropped). tier.mu
// must be held.
func (p *hotPart) putLocked(key string, sum uint64, envLen int, obj interface{}, fast bool, epoch uint64, prob bool) {
	t := p.tier
	cost := p.cost(key, envLen)
	if e, ok := p.m[key]; ok {
		t.removeLocked(e)
	}
	if cost > t.budget {
		return
	}
	e := &hotEntry{part: p, key: key, sum: sum, obj: obj, cost: cost, fast: fast, epoch: epoch, prob: prob}
	p.m[key] = e
	t.pushFrontLocked(e)
	t.used += cost
	if prob {
		t.probUsed += cost
	}
	p.metrics.bytes.Add(float64(cost))
	p.metrics.entries.Inc()
	for t.probUsed > t.probBudget && t.prob.prev != e {
		t.evictLocked(t.prob.prev)
	}
	for t.used > t.budget {
		// The main segment's least recently used entry, unless that is
		// the one just put.
		last := t.lru.prev
		if last == &t.lru || last == e {
			last = t.prob.prev
		}
		if last == &t.prob || last == e {
			break // only e is left, and it fits
		}
		t.evictLocked(last)
	}
}

// probMin is the least share of a tier's budget probation keeps.
func (t *hotTier) probMin() int64 { return t.budget / 16 }

// evictLocked drops e to make room; a probation entry's key is
// remembered, and probation's share shrinks (see hotTier). tier.mu must
// be held.
func (t *hotTier) evictLocked(e *hotEntry) {
	if e.prob {
		t.ghosts.add(e.part.ghost(e.key))
		t.probBudget = max(t.probMin(), t.probBudget-e.cost/8)
	}
	t.removeLocked(e)
	e.part.metrics.evictions.Inc()
}

// promoteLocked marks e as the most recently used entry, in the main
// segment: a point read found it. tier.mu must be held.
func (t *hotTier) promoteLocked(e *hotEntry) {
	t.unlinkLocked(e)
	if e.prob {
		e.prob = false
		t.probUsed -= e.cost
	}
	t.pushFrontLocked(e)
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
	if e.prob {
		t.probUsed -= e.cost
	}
	e.part.metrics.bytes.Sub(float64(e.cost))
	e.part.metrics.entries.Dec()
}

func (t *hotTier) unlinkLocked(e *hotEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// pushFrontLocked makes e the most recently used entry of its segment.
func (t *hotTier) pushFrontLocked(e *hotEntry) {
	head := &t.lru
	if e.prob {
		head = &t.prob
	}
	e.prev, e.next = head, head.next
	head.next.prev = e
	head.next = e
}
