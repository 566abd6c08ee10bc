// Package hot is the bolt store's hot tier: a least-recently-used cache of
// decoded objects bounded in bytes, so that repeated point reads of the
// same objects (a controller's lister Get after an event) skip the
// decoding, which is most of a read's cost. One Tier serves every store of
// a DB that does not have its own, under one budget; each store has its
// Part of it. A Part that holds every object of its store answers its bulk
// reads too, without reading the file (whole.go).
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
//     store's own write (Committed), or by a read or hash check that no
//     write overlapped, under way when it began or begun before the entry
//     was put (Stamp), while no other
//     write has touched the file since (the DB's Epoch, bumped before and
//     after every write transaction but the store's own batches, which
//     update the tier themselves: a relist's commit, an index rebuild,
//     another resource's relist). No other process writes the file
//     meanwhile: a read-write DB holds an exclusive lock on it, and a
//     writer that finds the file held by read-only DBs writes a copy
//     instead, never their file.
//
// Cached objects are shared by every caller that reads them: the store
// never mutates them, and callers must not either (store.Store's
// ownership rule, as in client-go).
//
// Two segments share the budget, as in the 2Q and ARC policies. An object
// a write puts enters probation; an entry moves to the main segment when a
// point read finds it, or when the object is written again while cached or
// soon after it left probation (the keys probation evicted are remembered,
// hashed, in a ring of their own, the ghosts, until they enter the main
// segment); an object a point read decoded enters the main segment
// directly. Eviction takes probation's least recently used entry while
// probation is over its share (but never its newest entry), then the main
// segment's while the tier is over its budget.
//
// Probation's share adapts to the readers, between a sixteenth of the
// budget and all of it (half to begin with): a point read that misses an
// object probation evicted grows it by that object's cost (the readers
// come later than probation keeps writes: a controller's reconcile lags
// its events), and each eviction from probation shrinks it by an eighth
// of the evicted object's cost. Writes that nothing reads, over many
// objects each written seldom (a churn spread over a large cluster), thus
// keep a sixteenth of the budget alive instead of all of it. The
// measurements behind these choices are in docs/design/bolt.md.
package hot

import (
	"hash/maphash"
	"iter"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Metrics receives the measurements of a Part. Its methods are called
// concurrently, some with the tier's lock held: they must not block.
type Metrics interface {
	// Hit counts a point read served by the tier, Miss one that decoded.
	Hit()
	Miss()
	// Evicted counts an entry evicted to stay within the budget.
	Evicted()
	// Added and Removed count an entry entering and leaving the tier,
	// with its estimated bytes.
	Added(bytes int64)
	Removed(bytes int64)
}

// Tier is a hot tier, shared by the Parts made from it.
type Tier struct {
	seed   maphash.Seed
	budget int64 // bytes, > 0
	// probBudget is probation's share of budget, which adapts between
	// probMin and budget (guarded by mu).
	probBudget int64
	// parts numbers the parts (Part.id).
	parts atomic.Uint64

	// mu guards used, probUsed, the parts' maps and seqs, the lists and
	// the ghosts. Lock order: the store's lock, then mu; mu is never held
	// across a transaction or a decode.
	mu       sync.Mutex
	used     int64 // estimated bytes of the cached objects
	probUsed int64 // the part of used in probation
	lru      entry // main segment's sentinel: lru.next is the most recently used
	prob     entry // probation's sentinel, the same
	ghosts   ghosts
}

// Part is one store's share of a Tier: its entries and metrics. A nil
// *Part is valid and caches nothing.
type Part struct {
	tier *Tier
	// id tells the part's keys apart from other parts' among the ghosts.
	id uint64
	// factor estimates a decoded object's heap bytes from its envelope's
	// length (see costFactor).
	factor  float64
	metrics Metrics
	// epoch is the DB's write epoch.
	epoch *Epoch
	// m holds the store's entries by item key, seq counts the store's
	// commits, twice each (Begin, then Committed or Aborted), and writing
	// is set between the two; guarded by tier.mu.
	m       map[string]*entry
	seq     uint64
	writing bool
	// order is m's entries by key while the part is known to hold every
	// object of its store (whole.go); nil otherwise. Guarded by tier.mu.
	order *order
}

// Stamp is what a point read saw before its transaction began: an entry
// it puts is fast only if neither changed before the put, and no batch of
// the store was under way when it was taken (settled): a transaction that
// begins then may see the batch's writes before Committed tells the tier,
// and a read that sees them must not put or confirm them as fast next to
// entries the batch changes or deletes (a whole part's order would hold
// both states). The zero Stamp is never settled: the most cautious.
type Stamp struct {
	epoch, seq uint64
	settled    bool
}

// stampLocked returns the stamp of a read that begins now, at epoch.
// tier.mu must be held.
func (p *Part) stampLocked(epoch uint64) Stamp {
	return Stamp{epoch: epoch, seq: p.seq, settled: !p.writing}
}

// unchangedLocked reports whether what a read whose transaction began
// after st saw is what the store holds now, as far as the store's batches
// go: no batch was under way when st was taken, nor began since. The
// epoch is checked apart. tier.mu must be held.
func (p *Part) unchangedLocked(st Stamp) bool { return st.settled && st.seq == p.seq }

type entry struct {
	part       *Part
	key        string
	sum        uint64
	obj        interface{}
	cost       int64
	prev, next *entry
	// fast: the entry may be returned without reading the envelope while
	// epoch is the DB's.
	fast  bool
	epoch uint64
	// prob: the entry is in probation.
	prob bool
	// removed: the entry left the tier (an order may still list it).
	removed bool
}

// entryOverhead is the bytes an entry costs beyond its object and key:
// the entry, its map slot and list links, and its slot in an order
// (whole.go).
const entryOverhead = 160

// New returns a tier of budget bytes, or nil (no tier) for budget <= 0.
func New(budget int64) *Tier {
	if budget <= 0 {
		return nil
	}
	t := &Tier{seed: maphash.MakeSeed(), budget: budget, probBudget: budget / 2}
	t.lru.next, t.lru.prev = &t.lru, &t.lru
	t.prob.next, t.prob.prev = &t.prob, &t.prob
	t.ghosts.init(int(max(budget/ghostBytes, 64)))
	return t
}

// Budget returns t's budget in bytes.
func (t *Tier) Budget() int64 { return t.budget }

// Part returns a new part of t for a store whose codec is named
// codecName, counting in m; epoch is the DB's write epoch, which every
// write transaction that may change stored objects without telling the
// part (Committed) bumps before and after. It returns nil if t is nil.
func (t *Tier) Part(codecName string, m Metrics, epoch *Epoch) *Part {
	if t == nil {
		return nil
	}
	return &Part{tier: t, id: t.parts.Add(1), factor: costFactor(codecName), metrics: m, epoch: epoch, m: map[string]*entry{}}
}

// Tier returns the tier p is a part of.
func (p *Part) Tier() *Tier { return p.tier }

// Stamp returns what a point read must record before its transaction.
func (p *Part) Stamp() Stamp {
	epoch := p.epoch.Load()
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	return p.stampLocked(epoch)
}

// Fast returns the object of a fast entry for key, valid without reading
// the file, and counts a hit; ok is false (nothing counted) otherwise, and
// st is then the stamp the point read records before its transaction,
// taken under the same lock (see Stamp).
func (p *Part) Fast(key string) (obj interface{}, ok bool, st Stamp) {
	if p == nil {
		return nil, false, Stamp{}
	}
	t := p.tier
	epoch := p.epoch.Load()
	t.mu.Lock()
	e, found := p.m[key]
	if !found || !e.fast || e.epoch != epoch {
		st = p.stampLocked(epoch)
		t.mu.Unlock()
		return nil, false, st
	}
	t.promoteLocked(e)
	obj = e.obj // an entry may change in place (putLocked)
	t.mu.Unlock()
	p.metrics.Hit()
	return obj, true, Stamp{}
}

// Write is a write of a store's commit, as Committed takes it.
type Write struct {
	Key    string
	Delete bool
	// Sum identifies the envelope written (Part.Sum), EnvLen its length;
	// Obj is the object written. For upserts only.
	Sum    uint64
	EnvLen int
	Obj    interface{}
}

// Begin tells the tier that the store is about to commit a batch, whose
// Committed follows: entries put by reads that began before it are not
// fast, and no bulk read that overlaps the commit finds the part whole
// (Complete). The store's write lock must be held.
func (p *Part) Begin() {
	if p == nil {
		return
	}
	p.tier.mu.Lock()
	p.seq++
	p.writing = true
	p.tier.mu.Unlock()
}

// Aborted tells the tier that the batch Begin announced did not commit.
// The store's write lock must be held.
func (p *Part) Aborted() {
	if p == nil {
		return
	}
	p.tier.mu.Lock()
	p.seq++
	p.writing = false
	p.tier.mu.Unlock()
}

// Committed updates the tier after the store's commit of writes, in
// their order: their objects become fast entries (in probation unless
// written again soon, see the package documentation, or the part is
// whole), deleted keys leave, and entries put by reads that began before
// the commit are not fast. The store's write lock must be held.
func (p *Part) Committed(writes iter.Seq[Write]) {
	if p == nil {
		return
	}
	t := p.tier
	epoch := p.epoch.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	p.seq++
	p.writing = false
	for w := range writes {
		if w.Delete {
			if e, ok := p.m[w.Key]; ok {
				t.deleteLocked(e)
			}
			continue
		}
		prob := false
		if _, cached := p.m[w.Key]; !cached && p.order == nil {
			// Written again soon after probation evicted it: into the
			// main segment, and out of the ghosts. A whole part keeps
			// its writes in the main segment, whole.
			prob = !t.ghosts.take(p.ghost(w.Key))
		}
		p.putLocked(w.Key, w.Sum, w.EnvLen, w.Obj, true, epoch, prob)
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

// Cost estimates the bytes an entry for key holds, with an envelope of
// envLen bytes of the codec named codecName.
func Cost(codecName, key string, envLen int) int64 {
	return cost(costFactor(codecName), len(key), envLen)
}

func cost(factor float64, keyLen, envLen int) int64 {
	return int64(float64(envLen)*factor) + int64(keyLen) + entryOverhead
}

// Sum returns what identifies the bytes of an envelope whose checksum was
// verified (or just written): the checksum, and a hash of the
// resourceVersion.
func (p *Part) Sum(env []byte) uint64 {
	rv, _ := layout.EnvelopeRVBytes(env)
	return uint64(layout.EnvelopeSum(env))<<32 | uint64(uint32(maphash.Bytes(p.tier.seed, rv)))
}

// cost estimates the bytes an entry for key with an envelope of envLen
// bytes holds.
func (p *Part) cost(key string, envLen int) int64 { return cost(p.factor, len(key), envLen) }

// Get returns the object cached for key if it was decoded from an
// envelope with hash sum, and counts a hit or a miss: for point reads,
// whose transaction began after st. A hit makes the entry fast if nothing
// was written since st.
func (p *Part) Get(key []byte, sum uint64, st Stamp) (interface{}, bool) {
	if p == nil {
		return nil, false
	}
	t := p.tier
	t.mu.Lock()
	e, ok := p.m[string(key)]
	if ok && e.sum == sum {
		t.promoteLocked(e)
		e.fast, e.epoch = p.unchangedLocked(st), st.epoch
		p.keptLocked(e, false)
		obj := e.obj
		t.mu.Unlock()
		p.metrics.Hit()
		return obj, true
	}
	t.mu.Unlock()
	p.metrics.Miss()
	return nil, false
}

// Peek is Get of the object decoded from envelope env (verified by the
// read) without marking the entry as recently used and without counting:
// for bulk reads and writers, whose reads must not decide what the tier
// keeps.
func (p *Part) Peek(key, env []byte) (interface{}, bool) {
	if p == nil {
		return nil, false
	}
	sum := p.Sum(env)
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	if e, ok := p.m[string(key)]; ok && e.sum == sum {
		return e.obj, true
	}
	return nil, false
}

// Put caches obj, decoded by a point read whose transaction began after
// st from an envelope of envLen bytes with hash sum, under key, in the
// main segment.
func (p *Part) Put(key string, sum uint64, envLen int, obj interface{}, st Stamp) {
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
	p.putLocked(key, sum, envLen, obj, p.unchangedLocked(st), st.epoch, false)
}

// putLocked caches obj under key, in probation if prob, evicting the
// least recently used entries beyond probation's share and the tier's
// budget (of any part). An object larger than the whole budget is not
// cached (and an older entry for key is dropped), nor is a key new to a
// whole part that is not fast. tier.mu must be held.
func (p *Part) putLocked(key string, sum uint64, envLen int, obj interface{}, fast bool, epoch uint64, prob bool) {
	t := p.tier
	cost := p.cost(key, envLen)
	e, ok := p.m[key]
	if cost > t.budget {
		if ok {
			t.removeLocked(e)
		} else {
			p.order = nil // the part no longer holds every stored object
		}
		return
	}
	if !ok && !fast && p.order != nil && p.order.epoch == p.epoch.Load() {
		// A key a whole part does not hold, read unchecked (a batch
		// under way may have created it, and its Committed brings it):
		// caching it would end the part's wholeness for nothing.
		return
	}
	if ok {
		// Changed in place, so that an order (whole.go) keeps it.
		t.unlinkLocked(e)
		t.used -= e.cost
		if e.prob {
			t.probUsed -= e.cost
		}
		p.metrics.Removed(e.cost)
		e.sum, e.obj, e.cost, e.fast, e.epoch, e.prob = sum, obj, cost, fast, epoch, prob
	} else {
		e = &entry{part: p, key: key, sum: sum, obj: obj, cost: cost, fast: fast, epoch: epoch, prob: prob}
		p.m[key] = e
	}
	p.keptLocked(e, !ok)
	t.pushFrontLocked(e)
	t.used += cost
	if prob {
		t.probUsed += cost
	}
	p.metrics.Added(cost)
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
func (t *Tier) probMin() int64 { return t.budget / 16 }

// evictLocked drops e to make room; a probation entry's key is
// remembered, and probation's share shrinks (see the package
// documentation). t.mu must be held.
func (t *Tier) evictLocked(e *entry) {
	if e.prob {
		t.ghosts.add(e.part.ghost(e.key))
		t.probBudget = max(t.probMin(), t.probBudget-e.cost/8)
	}
	t.removeLocked(e)
	e.part.metrics.Evicted()
}

// promoteLocked marks e as the most recently used entry, in the main
// segment: a point read found it. t.mu must be held.
func (t *Tier) promoteLocked(e *entry) {
	t.unlinkLocked(e)
	if e.prob {
		e.prob = false
		t.probUsed -= e.cost
	}
	t.pushFrontLocked(e)
}

// Clear removes p's entries (its store closes).
func (p *Part) Clear() {
	if p == nil {
		return
	}
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	for _, e := range p.m {
		p.tier.removeLocked(e)
	}
	p.order = nil
}

// removeLocked drops e from the tier, which no longer holds the stored
// object of its key (an eviction). t.mu must be held.
func (t *Tier) removeLocked(e *entry) {
	e.part.removedLocked(e, false)
	t.dropLocked(e)
}

// deleteLocked drops e from the tier: the store deleted its object. t.mu
// must be held.
func (t *Tier) deleteLocked(e *entry) {
	e.part.removedLocked(e, true)
	t.dropLocked(e)
}

// dropLocked drops e from the tier, and its object (an order may still
// list e until its next merge). t.mu must be held.
func (t *Tier) dropLocked(e *entry) {
	e.obj = nil
	t.unlinkLocked(e)
	delete(e.part.m, e.key)
	t.used -= e.cost
	if e.prob {
		t.probUsed -= e.cost
	}
	e.part.metrics.Removed(e.cost)
}

func (t *Tier) unlinkLocked(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// pushFrontLocked makes e the most recently used entry of its segment.
func (t *Tier) pushFrontLocked(e *entry) {
	head := &t.lru
	if e.prob {
		head = &t.prob
	}
	e.prev, e.next = head, head.next
	head.next.prev = e
	head.next = e
}
