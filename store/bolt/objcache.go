package bolt

import (
	"container/list"
	"hash/maphash"
	"sync"
)

// objectCache is a bounded LRU of decoded objects, so that repeated point
// reads of the same objects (a controller's lister calls) skip the
// decoding, which is most of a read's cost (see doc.go). An entry is valid
// while the item's stored envelope is byte for byte the one it was decoded
// from: entries are keyed by item key and checked against a hash of the
// envelope read in the same transaction, so writes, relists and other
// processes never need to invalidate anything, and a stale entry is never
// returned (short of a 64-bit hash collision on the same key).
//
// Cached objects are shared by every caller that reads them: the store
// never mutates them, and callers must not either (store.Store's
// ownership rule, as in client-go).
type objectCache struct {
	seed maphash.Seed
	max  int

	// mu guards m and ll.
	mu sync.Mutex
	m  map[string]*list.Element // of *cacheEntry
	ll list.List                // most recently used first
}

type cacheEntry struct {
	key string
	sum uint64
	obj interface{}
}

// newObjectCache returns a cache of up to n objects, or nil (no cache) for
// n <= 0. A nil *objectCache is valid and caches nothing.
func newObjectCache(n int) *objectCache {
	if n <= 0 {
		return nil
	}
	return &objectCache{seed: maphash.MakeSeed(), max: n, m: make(map[string]*list.Element, n)}
}

// sum returns the hash of an envelope.
func (c *objectCache) sum(env []byte) uint64 {
	return maphash.Bytes(c.seed, env)
}

// get returns the object cached for key if it was decoded from an envelope
// with hash sum.
func (c *objectCache) get(key []byte, sum uint64) (interface{}, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[string(key)]
	if !ok {
		return nil, false
	}
	ent := e.Value.(*cacheEntry)
	if ent.sum != sum {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return ent.obj, true
}

// peek is get without marking the entry as recently used: for writers,
// whose reads must not decide what the cache keeps.
func (c *objectCache) peek(key []byte, sum uint64) (interface{}, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[string(key)]
	if !ok {
		return nil, false
	}
	if ent := e.Value.(*cacheEntry); ent.sum == sum {
		return ent.obj, true
	}
	return nil, false
}

// put caches obj, decoded from an envelope with hash sum, under key.
func (c *objectCache) put(key string, sum uint64, obj interface{}) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		ent := e.Value.(*cacheEntry)
		ent.sum, ent.obj = sum, obj
		c.ll.MoveToFront(e)
		return
	}
	c.m[key] = c.ll.PushFront(&cacheEntry{key: key, sum: sum, obj: obj})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*cacheEntry).key)
	}
}

// clear empties the cache (Close).
func (c *objectCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.ll.Init()
}
