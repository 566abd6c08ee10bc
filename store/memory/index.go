package memory

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// indexLocked returns the position of the named index or an error wrapping
// store.ErrIndexNotFound. s.mu must be held.
func (s *Store) indexLocked(op, indexName string) (int, error) {
	i, ok := s.indexPos[indexName]
	if !ok {
		return 0, fmt.Errorf("memory: %s: index %q: %w", op, indexName, store.ErrIndexNotFound)
	}
	return i, nil
}

// Index returns the stored objects whose values for indexName share at
// least one value with those of obj, in no particular order.
func (s *Store) Index(indexName string, obj interface{}) ([]interface{}, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed("index")
	}
	i, err := s.indexLocked("index", indexName)
	if err != nil {
		return nil, err
	}
	values, err := indexValuesOf(s.indexers[i], "", obj)
	if err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	idx := s.cur.indices[i]
	if len(values) == 1 {
		return s.objectsLocked(idx[values[0]]), nil
	}
	union := map[string]struct{}{}
	for _, v := range values {
		for k := range idx[v] {
			union[k] = struct{}{}
		}
	}
	return s.objectsLocked(union), nil
}

// objectsLocked returns the objects stored under keys. s.mu must be held.
func (s *Store) objectsLocked(keys map[string]struct{}) []interface{} {
	out := make([]interface{}, 0, len(keys))
	for k := range keys {
		out = append(out, s.cur.items[k].obj)
	}
	return out
}

// IndexKeys returns, sorted, the keys of the stored objects whose values
// for indexName include indexedValue.
func (s *Store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed("index keys")
	}
	i, err := s.indexLocked("index keys", indexName)
	if err != nil {
		return nil, err
	}
	return sortedKeys(s.cur.indices[i][indexedValue]), nil
}

// ByIndex returns the stored objects whose values for indexName include
// indexedValue, in no particular order.
func (s *Store) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed("by index")
	}
	i, err := s.indexLocked("by index", indexName)
	if err != nil {
		return nil, err
	}
	return s.objectsLocked(s.cur.indices[i][indexedValue]), nil
}

// ListIndexFuncValues returns the values of indexName that at least one
// stored object has, in no particular order. An unknown index yields an
// empty list, as in client-go.
func (s *Store) ListIndexFuncValues(indexName string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.indexPos[indexName]
	if !ok {
		return []string{}
	}
	idx := s.cur.indices[i]
	out := make([]string, 0, len(idx))
	for v := range idx {
		out = append(out, v)
	}
	return out
}

// GetIndexers returns a copy of the store's indexers (nil after Close).
func (s *Store) GetIndexers() cache.Indexers {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	out := make(cache.Indexers, len(s.indexers))
	for _, ix := range s.indexers {
		out[ix.name] = ix.fn
	}
	return out
}

// AddIndexers adds indexes and indexes the stored objects with them. A name
// that exists returns an error wrapping store.ErrIndexConflict; a nil
// function ErrInvalidIndexer; an index function error on a stored object
// ErrIndexFunc. On error no index is added. While a Replace is open it
// returns store.ErrReplaceInProgress, because the staged content was
// indexed with the indexers the Replace began with.
func (s *Store) AddIndexers(newIndexers cache.Indexers) error {
	added, err := validIndexers("add indexers", newIndexers)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed("add indexers")
	}
	if s.replace != nil || s.fill != nil {
		return fmt.Errorf("memory: add indexers: %w", store.ErrReplaceInProgress)
	}
	var conflicts []string
	for _, ix := range added {
		if _, ok := s.indexPos[ix.name]; ok {
			conflicts = append(conflicts, ix.name)
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("memory: add indexers %s: %w", strings.Join(conflicts, ", "), store.ErrIndexConflict)
	}
	if len(added) == 0 {
		return nil
	}
	// Compute everything first so that an error changes nothing.
	newValues := make(map[string][][]string, len(s.cur.items))
	for key, e := range s.cur.items {
		vs := make([][]string, len(added))
		for j, ix := range added {
			if vs[j], err = indexValuesOf(ix, key, e.obj); err != nil {
				return fmt.Errorf("memory: add indexers: %w", err)
			}
		}
		newValues[key] = vs
	}
	first := len(s.indexers)
	indexers := slices.Concat(s.indexers, added)
	pos := make(map[string]int, len(indexers))
	for i, ix := range indexers {
		pos[ix.name] = i
	}
	s.indexers, s.indexPos = indexers, pos
	for range added {
		s.cur.indices = append(s.cur.indices, valueIndex{})
	}
	for key, e := range s.cur.items {
		e.values = slices.Concat(e.values, newValues[key])
		s.cur.items[key] = e
		for j, vs := range newValues[key] {
			s.cur.fileKey(first+j, key, vs)
		}
	}
	return nil
}
