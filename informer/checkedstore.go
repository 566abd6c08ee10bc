package informer

import (
	"context"

	"github.com/warmcache/warmcache/store"
)

// checkedStore is the store GetStore and GetIndexer return while the
// mutation detector is on: every object a read returns is watched by the
// detector. Writes and everything else go to the store itself. It answers
// store.Select and store.GetUncached as the store does.
type checkedStore struct {
	store.Store
	d *mutationDetector
}

func (s *checkedStore) watchAll(objs []interface{}) []interface{} {
	for _, o := range objs {
		s.d.watch(o)
	}
	return objs
}

// Get implements cache.Store.
func (s *checkedStore) Get(obj interface{}) (interface{}, bool, error) {
	item, ok, err := s.Store.Get(obj)
	s.d.watch(item)
	return item, ok, err
}

// GetByKey implements cache.Store.
func (s *checkedStore) GetByKey(key string) (interface{}, bool, error) {
	item, ok, err := s.Store.GetByKey(key)
	s.d.watch(item)
	return item, ok, err
}

// List implements cache.Store.
func (s *checkedStore) List() []interface{} { return s.watchAll(s.Store.List()) }

// Index implements cache.Indexer.
func (s *checkedStore) Index(indexName string, obj interface{}) ([]interface{}, error) {
	objs, err := s.Store.Index(indexName, obj)
	return s.watchAll(objs), err
}

// ByIndex implements cache.Indexer.
func (s *checkedStore) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	objs, err := s.Store.ByIndex(indexName, indexedValue)
	return s.watchAll(objs), err
}

// Scan implements store.Store.
func (s *checkedStore) Scan(ctx context.Context, fn store.ScanFunc) error {
	return s.Store.Scan(ctx, s.watchFn(fn))
}

// Select implements store.SelectStore: the store's own selection (or
// store.Select's reading of it), every selected object watched.
func (s *checkedStore) Select(ctx context.Context, sel store.Selection, fn store.ScanFunc) error {
	return store.Select(ctx, s.Store, sel, s.watchFn(fn))
}

// GetByKeyUncached implements store.UncachedReader.
func (s *checkedStore) GetByKeyUncached(key string) (interface{}, bool, error) {
	item, ok, err := store.GetUncached(s.Store, key)
	s.d.watch(item)
	return item, ok, err
}

// ScanIndex implements store.Store.
func (s *checkedStore) ScanIndex(ctx context.Context, indexName, indexedValue string, fn store.ScanFunc) error {
	return s.Store.ScanIndex(ctx, indexName, indexedValue, s.watchFn(fn))
}

func (s *checkedStore) watchFn(fn store.ScanFunc) store.ScanFunc {
	return func(key string, obj interface{}) error {
		s.d.watch(obj)
		return fn(key, obj)
	}
}

var (
	_ store.SelectStore    = (*checkedStore)(nil)
	_ store.UncachedReader = (*checkedStore)(nil)
)
