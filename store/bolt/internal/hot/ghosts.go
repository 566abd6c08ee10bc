package hot

import "hash/maphash"

// ghostBytes is the tier's budget per key its ghosts remember: a 32
// MiB tier remembers the last 8,192 keys probation evicted, about three
// times the podgen pods the whole tier holds, so that an object written
// again within a few thousand writes (a rollout's pods, a flapping node's)
// enters the main segment, and one written again after a hundred
// thousand (a churn spread over every pod) does not.
const ghostBytes = 4096

// ghosts remembers the hashes of the last keys probation evicted, oldest
// first out: a ring and a count of each hash in it. Neither holds a
// pointer the collector must follow. A hash collision only lets an entry
// into the main segment early. Both grow with the evictions, up to size
// hashes: a tier that never evicts (one that holds a small cluster) keeps
// none, instead of the 350 KB a 32 MiB tier's would take from the start.
type ghosts struct {
	size int
	ring []uint64
	next int // the slot the next hash overwrites
	n    int // hashes in the ring
	in   map[uint64]ghost
}

// ghost counts a hash's slots in the ring, and how many of them,
// the oldest, were forgotten.
type ghost struct {
	slots, forgotten int32
}

func (g *ghosts) init(size int) {
	g.size = size
	g.in = map[uint64]ghost{}
}

// add remembers h, forgetting the oldest hash if the ring is full.
func (g *ghosts) add(h uint64) {
	if g.n == len(g.ring) && len(g.ring) < g.size {
		// Full below its size: nothing was overwritten yet, so the ring
		// holds its hashes in order from slot 0, and the new slots
		// follow them.
		grown := make([]uint64, min(max(2*len(g.ring), 64), g.size))
		copy(grown, g.ring)
		g.ring, g.next = grown, g.n
	}
	if g.n == len(g.ring) {
		old := g.ring[g.next]
		o := g.in[old]
		// The oldest slot goes: a forgotten one if any is left.
		o.slots--
		o.forgotten = max(o.forgotten-1, 0)
		if o.slots <= 0 {
			delete(g.in, old)
		} else {
			g.in[old] = o
		}
	} else {
		g.n++
	}
	g.ring[g.next] = h
	g.next = (g.next + 1) % len(g.ring)
	o := g.in[h]
	o.slots++
	g.in[h] = o
}

// take reports whether h is remembered, and forgets it until it is added
// again: its key leaves the ghosts for the main segment. A hash stays in
// the ring until overwritten (take only marks it), and a key evicted again
// meanwhile is in it twice.
func (g *ghosts) take(h uint64) bool {
	o, ok := g.in[h]
	if !ok || o.slots <= o.forgotten {
		return false
	}
	o.forgotten = o.slots
	g.in[h] = o
	return true
}

// ghost returns the hash the ghosts remember key of p by.
func (p *Part) ghost(key string) uint64 {
	return maphash.String(p.tier.seed, key) ^ p.id*0x9e3779b97f4a7c15
}
