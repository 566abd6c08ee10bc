package memory

import (
	"context"
	"fmt"

	"github.com/warmcache/warmcache/store"
)

// Scan calls fn for every stored object in key order. It works on a
// snapshot of the keys and objects taken under the read lock and calls fn
// without the lock held, so fn sees the content as of the call. It stops at
// the first error from fn and returns it unchanged, or at ctx's
// cancellation.
func (s *Store) Scan(ctx context.Context, fn store.ScanFunc) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: scan: %w", err)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed("scan")
	}
	kvs := make([]keyValue, 0, len(s.cur.items))
	for k, e := range s.cur.items {
		kvs = append(kvs, keyValue{k, e.obj})
	}
	s.mu.RUnlock()
	return callSorted(ctx, "scan", kvs, fn)
}

// ScanIndex is Scan restricted to the objects whose values for indexName
// include indexedValue. An unknown index returns an error wrapping
// store.ErrIndexNotFound.
func (s *Store) ScanIndex(ctx context.Context, indexName, indexedValue string, fn store.ScanFunc) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: scan index: %w", err)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed("scan index")
	}
	i, err := s.indexLocked("scan index", indexName)
	if err != nil {
		s.mu.RUnlock()
		return err
	}
	set := s.cur.indices[i][indexedValue]
	kvs := make([]keyValue, 0, len(set))
	for k := range set {
		kvs = append(kvs, keyValue{k, s.cur.items[k].obj})
	}
	s.mu.RUnlock()
	return callSorted(ctx, "scan index", kvs, fn)
}

// callSorted sorts kvs by key and calls fn for each, stopping at fn's first
// error (returned as is) or ctx's cancellation (wrapped with op).
func callSorted(ctx context.Context, op string, kvs []keyValue, fn store.ScanFunc) error {
	sortKeyValues(kvs)
	for _, kv := range kvs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memory: %s: %w", op, err)
		}
		if err := fn(kv.key, kv.obj); err != nil {
			return err
		}
	}
	return nil
}
