package bolt

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// indexFor returns the named indexer or an error wrapping
// store.ErrIndexNotFound.
func (s *Store) indexFor(op, name string) (indexer, error) {
	ix := s.indexers.Load()
	i, ok := ix.pos[name]
	if !ok {
		return indexer{}, s.errorf(op, fmt.Errorf("index %q: %w", name, store.ErrIndexNotFound))
	}
	return ix.list[i], nil
}

// indexKeysIn appends to keys the object keys filed under value in
// index x, in key order, and to bad the entries whose checksum does not
// match (skipped).
func indexKeysIn(x layout.Index, value string, keys []string, bad []keyError) ([]string, []keyError) {
	prefix := layout.AppendIndexPrefix(nil, value)
	c := x.B.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		key := string(k[len(prefix):])
		if err := x.Sums.Verify(k, v); err != nil {
			bad = append(bad, keyError{key, layout.IndexEntryError(x.Name, value, key, err)})
			continue
		}
		keys = append(keys, key)
	}
	return keys, bad
}

// getKeys decodes the objects stored under keys on every core, in the
// order of keys, skipping (and returning) those that fail. A key without
// an item is reported as corrupt too: the index promised it.
func (s *Store) getKeys(g *layout.Generation, keys []string) ([]interface{}, []keyError) {
	b := newBulkDecoder(s, len(keys))
	defer b.stop()
	for _, key := range keys {
		k := []byte(key)
		v := g.Items.Get(k)
		if v == nil {
			b.flush()
			b.bad = append(b.bad, keyError{key, fmt.Errorf("%w: %w: %q", ErrCorrupt, errIndexWithoutItem, key)})
			continue
		}
		b.addEntry(g, k, v)
	}
	b.flush()
	return b.out, b.bad
}

// Index returns the stored objects whose values for indexName share at
// least one value with those of obj, in key order.
func (s *Store) Index(indexName string, obj interface{}) ([]interface{}, error) {
	x, err := s.indexFor("index", indexName)
	if err != nil {
		return nil, err
	}
	values, err := indexValuesOf(x, "", obj)
	if err != nil {
		return nil, s.errorf("index", err)
	}
	var out []interface{}
	var bad []keyError
	err = s.readLive("index", func(g *layout.Generation) error {
		x, err := g.OpenIndex(indexName)
		if err != nil {
			return err
		}
		var keys []string
		var badEntries []keyError
		for _, v := range values {
			keys, badEntries = indexKeysIn(x, v, keys, badEntries)
		}
		if len(values) > 1 {
			slices.Sort(keys)
			keys = slices.Compact(keys)
		}
		out, bad = s.getKeys(g, keys)
		bad = append(badEntries, bad...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.corrupted("index", bad)
	return out, nil
}

// IndexKeys returns, in order, the keys of the stored objects whose values
// for indexName include indexedValue.
func (s *Store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	if _, err := s.indexFor("index keys", indexName); err != nil {
		return nil, err
	}
	keys := []string{}
	var bad []keyError
	err := s.readLive("index keys", func(g *layout.Generation) error {
		x, err := g.OpenIndex(indexName)
		if err != nil {
			return err
		}
		keys, bad = indexKeysIn(x, indexedValue, keys, nil)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.corrupted("index keys", bad)
	return keys, nil
}

// ByIndex returns, in key order, the objects whose values for indexName
// include indexedValue; one that does not decode is skipped, as by List.
func (s *Store) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	if _, err := s.indexFor("by index", indexName); err != nil {
		return nil, err
	}
	var out []interface{}
	var bad []keyError
	err := s.readLive("by index", func(g *layout.Generation) error {
		x, err := g.OpenIndex(indexName)
		if err != nil {
			return err
		}
		keys, badEntries := indexKeysIn(x, indexedValue, nil, nil)
		out, bad = s.getKeys(g, keys)
		bad = append(badEntries, bad...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.corrupted("by index", bad)
	return out, nil
}

// ListIndexFuncValues returns the values of indexName that a stored object
// has, in the order of their index keys (a value over 1 KiB by its first 256
// bytes and a hash). An unknown index yields an empty list.
func (s *Store) ListIndexFuncValues(indexName string) []string {
	out := []string{}
	if _, err := s.indexFor("list index values", indexName); err != nil {
		return out
	}
	var bad []keyError
	err := s.readLive("list index values", func(g *layout.Generation) error {
		x, err := g.OpenIndex(indexName)
		if err != nil {
			return err
		}
		c := x.B.Cursor()
		for k, v := c.First(); k != nil; {
			value, key, err := layout.SplitIndexKey(k, v)
			if err == nil {
				err = x.Sums.Verify(k, v)
			}
			if err != nil {
				// A damaged entry names no value that can be
				// trusted: skip it, not the entries after it.
				bad = append(bad, keyError{key, layout.IndexEntryError(indexName, value, key, err)})
				k, v = c.Next()
				continue
			}
			out = append(out, value)
			// Skip the other keys filed under value: seek past
			// escaped(value) 0x00 with the smallest greater prefix.
			next := layout.AppendIndexPrefix(nil, value)
			next[len(next)-1] = 0x01
			k, v = c.Seek(next)
		}
		return nil
	})
	s.readFailed("list index values", err)
	s.corrupted("list index values", bad)
	return out
}

// indexer is one named index function; fn is nil for stores opened with
// inspect.OpenRecorded, which know index names only.
type indexer struct {
	name string
	fn   cache.IndexFunc
}

// indexSet is a sorted, immutable list of indexers.
type indexSet struct {
	list []indexer
	pos  map[string]int
}

func newIndexSet(list []indexer) *indexSet {
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	s := &indexSet{list: list, pos: make(map[string]int, len(list))}
	for i, ix := range list {
		s.pos[ix.name] = i
	}
	return s
}

func (s *indexSet) names() []string {
	out := make([]string, len(s.list))
	for i, ix := range s.list {
		out[i] = ix.name
	}
	return out
}

// indexValuesOf returns the sorted, deduplicated values of x for obj.
func indexValuesOf(x indexer, key string, obj interface{}) ([]string, error) {
	if x.fn == nil {
		return nil, fmt.Errorf("index %q: %w", x.name, fileerr.ErrNoIndexFunc)
	}
	return layout.IndexValues(x.name, x.fn, key, obj)
}
