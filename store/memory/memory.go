// Package memory is warmcache's in-memory store: objects live on the Go heap
// in a map with hash indexes, as in client-go's cache.NewIndexer. It is the
// reference behaviour of the store.Store contract and the fast default when
// nothing needs to survive a restart.
//
// Differences from client-go's thread-safe store, all where client-go
// panics or drops information:
//
//   - An index function error, or panic, is returned (wrapping ErrIndexFunc
//     and the function's own error) and the write is not applied;
//     client-go panics.
//   - A key function panic (client-go's key functions panic on a typed nil
//     pointer) is returned as a cache.KeyError; client-go crashes.
//   - LastStoreSyncResourceVersion does not depend on the AtomicFIFO
//     feature gate.
//   - A transaction of an unknown type is an error (ErrTransactionType);
//     client-go ignores it and reports it successful.
//   - GetIndexers returns a copy.
//
// Like client-go's, the store holds values of any type (with a key
// function that keys them): client-go's own store, indexer and lister
// tests run on it with their plain structs (storetest.RunClientGo). Only
// objects with metadata move LastStoreSyncResourceVersion.
package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// Errors of this package, in addition to those of package store. They are
// wrapped with the operation and key; test with errors.Is.
var (
	// ErrIndexFunc is store.ErrIndexFunc: an index function failed or
	// panicked.
	ErrIndexFunc = store.ErrIndexFunc
	// ErrInvalidIndexer is returned by New and AddIndexers for a nil
	// index function.
	ErrInvalidIndexer = errors.New("invalid indexer")
	// ErrTransactionType is store.ErrTransactionType.
	ErrTransactionType = store.ErrTransactionType
)

// Options configures New.
type Options struct {
	// KeyFunc computes the key of an object. It is called without the
	// store's lock held. Default: store.DefaultKeyFunc.
	KeyFunc cache.KeyFunc
	// Indexers are the indexes the store starts with; more can be added
	// with AddIndexers. Every function must be non-nil, deterministic and
	// safe for concurrent use; it may be called with the store's lock held
	// and must not call the store. Default: none.
	Indexers cache.Indexers
}

// Store is an in-memory store.Store. All methods are safe for concurrent
// use. Objects are stored and returned as given, not copied: an object
// passed to the store belongs to it, and objects it returns are shared and
// must not be mutated (as in client-go).
//
// State().Complete is false until a Replace (cache.Store.Replace or
// BeginReplace followed by Commit) has been committed: before that the
// store holds only incremental changes and is no picture of the server.
// Later incremental changes keep it complete. A Replace committed with an
// empty resourceVersion makes the store complete too, with nothing to
// resume a watch from. RelistInterrupted and Discarded are never set, since
// nothing survives a restart.
//
// Writes made while a Replace is open change the current content and are
// discarded when the Replace commits, which installs the staged content.
//
// BeginFill (store.Filler) fills an empty store in place: State().Complete
// is false and the resourceVersion empty from BeginFill until the fill's
// Commit, and after an Abort until a Replace commits.
type Store struct {
	keyFunc cache.KeyFunc

	// mu guards every field below it and everything reachable from cur.
	// Readers take it for reading; writers, including index function
	// calls made on their behalf, take it for writing.
	mu sync.RWMutex
	// indexers is copy-on-write (see indexer); indexPos maps a name to its
	// position and is replaced together with it.
	indexers []indexer
	indexPos map[string]int
	cur      *content
	rv       string
	// complete is set by the first committed Replace.
	complete bool
	// replace is the open Replace, nil if none.
	replace *replace
	// fill is the open Fill (BeginFill), nil if none.
	fill *fill
	// retained is the committed Replace whose replaced content is kept
	// until its Release, nil if none.
	retained *replace
	closed   bool
}

var _ store.Store = (*Store)(nil)

// New returns an empty store configured by opts. A nil index function is
// an error wrapping ErrInvalidIndexer.
func New(opts Options) (*Store, error) {
	s := &Store{keyFunc: opts.KeyFunc, indexPos: map[string]int{}}
	if s.keyFunc == nil {
		s.keyFunc = store.DefaultKeyFunc
	}
	added, err := validIndexers("new", opts.Indexers)
	if err != nil {
		return nil, err
	}
	for i, ix := range added {
		s.indexPos[ix.name] = i
	}
	s.indexers = added
	s.cur = newContent(len(added), 0)
	return s, nil
}

// validIndexers returns indexers sorted by name, or an error for a nil
// function.
func validIndexers(op string, indexers cache.Indexers) ([]indexer, error) {
	out := make([]indexer, 0, len(indexers))
	for name, fn := range indexers {
		if fn == nil {
			return nil, fmt.Errorf("memory: %s: index %q: %w: nil IndexFunc", op, name, ErrInvalidIndexer)
		}
		out = append(out, indexer{name: name, fn: fn})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// keyOf returns obj's key or a cache.KeyError wrapped with op.
func (s *Store) keyOf(op string, obj interface{}) (string, error) {
	key, err := s.key(obj)
	if err != nil {
		return "", fmt.Errorf("memory: %s: %w", op, err)
	}
	return key, nil
}

// key calls the key function through store.KeyOf: its error or panic is a
// cache.KeyError.
func (s *Store) key(obj interface{}) (string, error) { return store.KeyOf(s.keyFunc, obj) }

// KeyFunc returns the store's key function.
func (s *Store) KeyFunc() cache.KeyFunc { return s.keyFunc }

// rvOf returns obj's resourceVersion and whether obj has object metadata.
// Only objects with metadata move the store's resourceVersion, as in
// client-go (a cache.DeletedFinalStateUnknown does not).
func rvOf(obj interface{}) (string, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

func errClosed(op string) error { return fmt.Errorf("memory: %s: %w", op, store.ErrClosed) }

// Add stores obj under its key, replacing any object there, and records
// obj's resourceVersion (even an empty one) as the store's.
func (s *Store) Add(obj interface{}) error { return s.write("add", obj, false) }

// Update is Add: both upsert, as in client-go.
func (s *Store) Update(obj interface{}) error { return s.write("update", obj, false) }

// Delete removes the object stored under obj's key, which may be a
// cache.DeletedFinalStateUnknown. Deleting an absent key is not an error.
// obj's resourceVersion is recorded as the store's even when the key was
// absent; a cache.DeletedFinalStateUnknown records none (client-go).
func (s *Store) Delete(obj interface{}) error { return s.write("delete", obj, true) }

// write upserts or deletes obj and records its resourceVersion.
func (s *Store) write(op string, obj interface{}, del bool) error {
	key, err := s.keyOf(op, obj)
	if err != nil {
		return err
	}
	rv, hasRV := rvOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed(op)
	}
	t := keyedTxn{key: key, obj: obj, delete: del}
	if !del {
		if t.values, _, err = indexValues(nil, s.indexers, key, obj); err != nil {
			return fmt.Errorf("memory: %s: %w", op, err)
		}
	}
	s.applyLocked(t)
	if hasRV {
		s.rv = rv
	}
	return nil
}

// Get returns the object stored under obj's key.
func (s *Store) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := s.keyOf("get", obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (s *Store) GetByKey(key string) (item interface{}, exists bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, false, errClosed("get " + key)
	}
	e, ok := s.cur.items[key]
	if !ok {
		return nil, false, nil
	}
	return e.obj, true, nil
}

// List returns every stored object, in no particular order. It returns nil
// after Close.
func (s *Store) List() []interface{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	out := make([]interface{}, 0, len(s.cur.items))
	for _, e := range s.cur.items {
		out = append(out, e.obj)
	}
	return out
}

// ListKeys returns every stored key, in no particular order. It returns
// nil after Close.
func (s *Store) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	out := make([]string, 0, len(s.cur.items))
	for k := range s.cur.items {
		out = append(out, k)
	}
	return out
}

// LastStoreSyncResourceVersion returns the resourceVersion recorded by the
// last write or bookmark ("" after Close).
func (s *Store) LastStoreSyncResourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

// Bookmark records rv, even an empty one, as the store's resourceVersion
// without changing items. It does nothing after Close.
func (s *Store) Bookmark(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.rv = rv
}

// Replace replaces the whole content with list and records rv, atomically,
// through BeginReplace. A key or index function error leaves the store
// unchanged. The store takes ownership of list.
func (s *Store) Replace(list []interface{}, rv string) error {
	ctx := context.Background()
	r, err := s.BeginReplace(ctx)
	if err != nil {
		return err
	}
	if err := r.Add(ctx, list...); err != nil {
		_ = r.Abort()
		return err
	}
	if err := r.Commit(ctx, rv); err != nil {
		_ = r.Abort()
		return err
	}
	return r.Release()
}

// Resync does nothing, as in client-go; it returns ErrClosed after Close.
func (s *Store) Resync() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed("resync")
	}
	return nil
}

// State reports the recorded resourceVersion, whether a Replace has been
// committed (Complete) and the number of objects.
func (s *Store) State() (store.State, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.State{}, errClosed("state")
	}
	return store.State{ResourceVersion: s.rv, Complete: s.complete, Objects: len(s.cur.items)}, nil
}

// ResourceVersionOf returns the resourceVersion the object stored under key
// had when it was written ("" for an object without metadata), whatever a
// holder of the shared object did to it since.
func (s *Store) ResourceVersionOf(key string) (rv string, exists bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return "", false, errClosed("resource version of " + key)
	}
	e, ok := s.cur.items[key]
	if !ok {
		return "", false, nil
	}
	return e.rv, true, nil
}

// Close releases the content and aborts an open Replace. Other methods
// return ErrClosed afterwards; Close itself may be called again.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cur = newContent(0, 0)
	s.indexers = nil
	s.indexPos = map[string]int{}
	s.replace = nil
	s.fill = nil
	s.releaseLocked()
	s.rv = ""
	return nil
}

// sortedKeys returns the keys of set in order.
func sortedKeys(set map[string]struct{}) []string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
