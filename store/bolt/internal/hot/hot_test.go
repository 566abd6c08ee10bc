package hot

import (
	"fmt"
	"slices"
	"testing"
)

// nopMetrics counts nothing.
type nopMetrics struct{}

func (nopMetrics) Hit()          {}
func (nopMetrics) Miss()         {}
func (nopMetrics) Evicted()      {}
func (nopMetrics) Added(int64)   {}
func (nopMetrics) Removed(int64) {}

// countMetrics counts what it is told.
type countMetrics struct {
	hits, misses, evicted, entries, bytes int64
}

func (m *countMetrics) Hit()            { m.hits++ }
func (m *countMetrics) Miss()           { m.misses++ }
func (m *countMetrics) Evicted()        { m.evicted++ }
func (m *countMetrics) Added(b int64)   { m.entries++; m.bytes += b }
func (m *countMetrics) Removed(b int64) { m.entries--; m.bytes -= b }

const envLen = 1000

// newTestPart returns a part of a new tier that holds n entries of
// envLen bytes with a four-character key, and not n+1.
func newTestPart(n int, m Metrics) (*Tier, *Part) {
	one := Cost("protobuf", "k000", envLen)
	tier := New(int64(n)*one + one/2)
	var epoch Epoch
	return tier, tier.Part("protobuf", m, &epoch)
}

// written commits writes of keys, as a store's batch does.
func written(p *Part, keys ...string) {
	p.Committed(func(yield func(Write) bool) {
		for _, k := range keys {
			if !yield(Write{Key: k, Sum: 1, EnvLen: envLen, Obj: k}) {
				return
			}
		}
	})
}

// TestCommittedEntersProbation checks that a commit's writes are fast
// entries in probation, its deletes leave, and the metrics follow.
func TestCommittedEntersProbation(t *testing.T) {
	m := &countMetrics{}
	_, p := newTestPart(8, m)
	written(p, "k000", "k001")
	for _, k := range []string{"k000", "k001"} {
		if e, ok := p.Entry(k); !ok || !e.Probation || !e.Fast {
			t.Errorf("%s after a commit: %+v, %t; want a fast entry in probation", k, e, ok)
		}
	}
	if obj, ok, _ := p.Fast("k001"); !ok || obj != "k001" {
		t.Errorf("Fast(k001) = %v, %t", obj, ok)
	}
	if e, _ := p.Entry("k001"); e.Probation {
		t.Error("a point read's hit left the entry in probation")
	}
	p.Committed(slices.Values([]Write{{Key: "k000", Delete: true}}))
	if _, ok := p.Entry("k000"); ok {
		t.Error("a deleted key is still cached")
	}
	if m.hits != 1 || m.entries != 1 || m.bytes != Cost("protobuf", "k001", envLen) {
		t.Errorf("metrics %+v, want 1 hit, 1 entry of its cost", *m)
	}
}

// TestReadNeverEvictsItself checks that an object a point read decodes
// stays cached when probation holds the whole budget: probation's least
// recently used entry makes room for it.
func TestReadNeverEvictsItself(t *testing.T) {
	tier, p := newTestPart(4, nopMetrics{})
	tier.mu.Lock()
	tier.probBudget = tier.budget
	tier.mu.Unlock()
	for i := range 5 { // probation keeps k001 to k004
		written(p, fmt.Sprintf("k%03d", i))
	}
	st := p.Stamp()
	if _, ok := p.Get([]byte("k000"), 1, st); ok {
		t.Fatal("k000 cached after probation evicted it")
	}
	p.Put("k000", 1, envLen, "k000", st)
	if _, ok := p.Get([]byte("k000"), 1, p.Stamp()); !ok {
		t.Error("an object a point read put is not cached")
	}
	if _, ok := p.Entry("k001"); ok {
		t.Error("probation's least recently used entry was kept")
	}
}

// TestGhostGrowsProbationOnce checks that probation's share grows once for
// a key probation evicted: the point read that misses it puts it in the
// main segment, and a later miss, after the main segment evicted it, is no
// sign that probation keeps writes too briefly.
func TestGhostGrowsProbationOnce(t *testing.T) {
	one := Cost("protobuf", "k000", envLen)
	tier := New(20 * one)
	var epoch Epoch
	p := tier.Part("protobuf", nopMetrics{}, &epoch)
	key := func(prefix string, i int) string { return fmt.Sprintf("%s%03d", prefix, i) }
	write := func(k string) {
		tier.mu.Lock()
		defer tier.mu.Unlock()
		p.putLocked(k, 1, envLen, k, true, 0, true)
	}
	share := func() int64 {
		s, _ := tier.ProbationShare()
		return s
	}
	read := func(k string) { p.Put(k, 1, envLen, k, p.Stamp()) }

	write("k000")
	for i := range 20 { // probation evicts k000
		write(key("w", i))
	}
	before := share()
	read("k000")
	if got := share(); got != before+one {
		t.Fatalf("probation's share %d after a read missed what probation evicted, want %d", got, before+one)
	}
	for i := range 20 { // the main segment evicts k000
		read(key("r", i))
	}
	if _, cached := p.Entry("k000"); cached {
		t.Fatal("k000 still cached after 20 reads of other objects")
	}
	before = share()
	read("k000")
	if got := share(); got != before {
		t.Errorf("probation's share %d after a read missed what the main segment evicted, want %d (unchanged)", got, before)
	}
}

// has reports whether g remembers h, without forgetting it.
func (g *ghosts) has(h uint64) bool {
	o := g.in[h]
	return o.slots > o.forgotten
}

// TestGhostsForget checks that a forgotten hash stays forgotten while its
// slots leave the ring, and that one added again after is remembered until
// its own slot leaves.
func TestGhostsForget(t *testing.T) {
	var g ghosts
	g.init(4)
	g.add(1)
	if !g.take(1) {
		t.Fatal("did not remember a hash added")
	}
	if g.has(1) || g.take(1) {
		t.Fatal("has a forgotten hash")
	}
	g.add(1)
	g.add(2)
	g.add(3)
	if !g.has(1) {
		t.Fatal("forgot a hash added again")
	}
	g.add(4) // overwrites the forgotten slot
	if !g.has(1) {
		t.Fatal("forgot a hash added again when its forgotten slot left")
	}
	g.add(5) // overwrites the slot added again
	if g.has(1) || len(g.in) != 4 {
		t.Errorf("has(1) %t with %d hashes counted after its last slot left, want false, 4", g.has(1), len(g.in))
	}
}

// TestNilPart checks that a nil part caches nothing and counts nothing.
func TestNilPart(t *testing.T) {
	var p *Part
	if New(0) != nil || New(0).Part("protobuf", nopMetrics{}, nil) != nil {
		t.Fatal("a tier of budget 0 is not nil")
	}
	p.Put("k", 1, 1, "k", Stamp{})
	written(p, "k")
	if _, ok := p.Peek([]byte("k"), nil); ok {
		t.Error("a nil part holds an object")
	}
	p.Clear()
}
