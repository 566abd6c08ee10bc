package memory

import (
	"slices"
	"strings"

	"github.com/warmcache/warmcache/store"

	"k8s.io/client-go/tools/cache"
)

// indexer is one named index function. A Store's indexers slice is
// copy-on-write: AddIndexers replaces it and never modifies it in place, so
// an open Replace may keep the slice it started with.
type indexer struct {
	name string
	fn   cache.IndexFunc
}

// valueIndex maps an indexed value to the set of keys filed under it. A
// value whose set becomes empty is removed, as in client-go, so that
// high-cardinality indexes of short-lived objects do not grow without bound
// (kubernetes/kubernetes#84959).
type valueIndex map[string]map[string]struct{}

// entry is one stored object and the values it is filed under.
type entry struct {
	obj interface{}
	// rv is obj's resourceVersion when it was stored. ResourceVersionOf
	// returns it rather than reading obj, which is shared with handlers: an
	// object mutated by one (a bug) must not change what the store compares
	// events with, as the bolt store's envelope does not change either.
	rv string
	// values[i] holds the deduplicated values of indexers[i] for obj. They
	// are kept so that an update or delete removes the old index entries
	// without calling index functions on the old object again.
	values [][]string
}

// content is a complete set of items and their indices. The store's current
// content is guarded by Store.mu; a Replace's staged content belongs to the
// Replace alone. content itself does no locking.
type content struct {
	items map[string]entry
	// indices[i] is the index built by the store's indexers[i].
	indices []valueIndex
}

func newContent(numIndexers, sizeHint int) *content {
	c := &content{
		items:   make(map[string]entry, sizeHint),
		indices: make([]valueIndex, numIndexers),
	}
	for i := range c.indices {
		c.indices[i] = valueIndex{}
	}
	return c
}

// indexValues computes the values every indexer yields for obj, each list
// deduplicated, into slab[:len(indexers)] and returns that and the rest of
// slab. Batches pass one slab for all their objects to save an allocation
// per object; a short slab is replaced by a new one. An index function
// error is returned wrapped with ErrIndexFunc, the index name and the key.
func indexValues(slab [][]string, indexers []indexer, key string, obj interface{}) (values, rest [][]string, err error) {
	n := len(indexers)
	if n == 0 {
		return nil, slab, nil
	}
	if len(slab) < n {
		slab = make([][]string, n)
	}
	values, rest = slab[:n:n], slab[n:]
	for i, ix := range indexers {
		if values[i], err = indexValuesOf(ix, key, obj); err != nil {
			return nil, rest, err
		}
	}
	return values, rest, nil
}

// indexValuesOf calls one index function through store.IndexValuesOf (an
// error or panic wraps ErrIndexFunc) and dedupes what it returns.
func indexValuesOf(ix indexer, key string, obj interface{}) ([]string, error) {
	v, err := store.IndexValuesOf(ix.name, ix.fn, key, obj)
	if err != nil {
		return nil, err
	}
	return dedupe(v), nil
}

// dedupe returns values without repeats, keeping the first occurrence. It
// does not modify its argument, which belongs to the index function.
func dedupe(values []string) []string {
	switch len(values) {
	case 0:
		return nil
	case 1:
		return values
	}
	out := make([]string, 0, len(values))
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// put stores obj under key with its precomputed index values and its
// resourceVersion as of now, moving the key between index sets as needed.
func (c *content) put(key string, obj interface{}, values [][]string) {
	e, exists := c.items[key]
	rv, _ := rvOf(obj)
	c.items[key] = entry{obj: obj, rv: rv, values: values}
	if !exists {
		for i, vs := range values {
			c.fileKey(i, key, vs)
		}
		return
	}
	for i, vs := range values {
		old := e.values[i]
		if slices.Equal(old, vs) {
			continue
		}
		c.unfileKey(i, key, old)
		c.fileKey(i, key, vs)
	}
}

// remove deletes key and its index entries. Removing an absent key does
// nothing.
func (c *content) remove(key string) {
	e, exists := c.items[key]
	if !exists {
		return
	}
	for i, vs := range e.values {
		c.unfileKey(i, key, vs)
	}
	delete(c.items, key)
}

func (c *content) fileKey(i int, key string, values []string) {
	idx := c.indices[i]
	for _, v := range values {
		set := idx[v]
		if set == nil {
			set = make(map[string]struct{}, 1)
			idx[v] = set
		}
		set[key] = struct{}{}
	}
}

func (c *content) unfileKey(i int, key string, values []string) {
	idx := c.indices[i]
	for _, v := range values {
		set := idx[v]
		if set == nil {
			continue
		}
		delete(set, key)
		if len(set) == 0 {
			delete(idx, v)
		}
	}
}

// keyValue is an object and its key, for the sorted snapshots Scan,
// ScanIndex and Vanished hand to their callbacks.
type keyValue struct {
	key string
	obj interface{}
}

func sortKeyValues(kvs []keyValue) {
	slices.SortFunc(kvs, func(a, b keyValue) int { return strings.Compare(a.key, b.key) })
}
