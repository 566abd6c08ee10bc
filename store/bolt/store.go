package bolt

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/parallel"
	"github.com/warmcache/warmcache/store/codec"
)

// Store is the store.Store of one resource in a DB: a client-go
// cache.Indexer and cache.TransactionStore whose objects live in the bbolt
// file. All methods are safe for concurrent use.
//
// Get, List, ByIndex and the like read one snapshot; Scan, ScanIndex,
// Select and Replace.Vanished read a chunk per transaction and call their
// function outside any, so it may read the store and may see writes made
// meanwhile. Objects are shared, never to be mutated (invariant 6).
//
// It differs from client-go's thread-safe store as store/memory does, and
// holds objects of its codec's type only (docs/design/bolt.md).
type Store struct {
	db        *DB
	name      string // bucket name, id.String()
	bname     []byte
	id        Identity
	codec     codec.Codec
	typeHash  string // typeFingerprint of the decoded type, recorded in meta
	cluster   string // ResourceOptions.Cluster, recorded in meta
	transform string // ResourceOptions.TransformVersion, recorded in meta
	keyFunc   cache.KeyFunc
	onCorrupt func(error)
	// fileCorrupt is set by the first fileCorrupted: the file's corruption
	// is told to OnCorruption once, however many paths find it.
	fileCorrupt atomic.Bool
	logger      klog.Logger
	// readOnly is set for stores of a read-only DB and for inspect.OpenRecorded.
	readOnly bool
	// hot is the store's part of its hot tier of decoded objects; nil if
	// disabled.
	hot *hot.Part

	closed atomic.Bool
	// indexers is the current indexer set, replaced (never modified) by
	// AddIndexers under mu.
	indexers atomic.Pointer[indexSet]
	// status is a snapshot of meta and the open-time findings for
	// lock-free State and LastStoreSyncResourceVersion; replaced after
	// every commit under mu.
	status atomic.Pointer[status]

	// mu serialises this store's writes and guards meta, replace and
	// retained. It is held for the duration of a write transaction; lock
	// order: mu, then bbolt's own locks. It is never held while calling a
	// ScanFunc.
	mu      sync.Mutex
	meta    layout.Meta // as last committed
	replace *replaceTx  // the open Replace, nil if none
	fill    *fillTx     // the open fill (BeginFill), nil if none
	// retained is the committed Replace whose replaced generation is kept
	// in the file until its Release, nil if none.
	retained *replaceTx
}

var _ store.Store = (*Store)(nil)

// status is what State reports without a transaction.
type status struct {
	meta              layout.Meta
	relistInterrupted bool
	discarded         string
}

// setMetaLocked records m as committed. s.mu must be held.
func (s *Store) setMetaLocked(m layout.Meta) {
	s.meta = m
	old := s.status.Load()
	st := &status{meta: m.Clone()}
	if old != nil {
		st.relistInterrupted, st.discarded = old.relistInterrupted, old.discarded
	}
	s.status.Store(st)
}

func (s *Store) errorf(op string, err error) error {
	return fmt.Errorf("bolt: %s %s: %w", op, s.name, err)
}

func (s *Store) errClosed(op string) error { return s.errorf(op, ErrClosed) }

// checkWritable returns an error for a closed or read-only store.
func (s *Store) checkWritable(op string) error {
	switch {
	case s.closed.Load():
		return s.errClosed(op)
	case s.readOnly:
		return s.errorf(op, ErrReadOnly)
	}
	return nil
}

// rvOf returns obj's resourceVersion and whether obj has object metadata
// (a cache.DeletedFinalStateUnknown has none).
func rvOf(obj interface{}) (string, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

// Add stores obj under its key, replacing any object there, and records
// obj's resourceVersion (even an empty one) as the store's, in one
// transaction.
func (s *Store) Add(obj interface{}) error {
	return s.apply(context.Background(), "add", []cache.Transaction{{Type: cache.TransactionTypeAdd, Object: obj}}, "")
}

// Update is Add: both upsert, as in client-go.
func (s *Store) Update(obj interface{}) error {
	return s.apply(context.Background(), "update", []cache.Transaction{{Type: cache.TransactionTypeUpdate, Object: obj}}, "")
}

// Delete removes the object stored under obj's key (obj may be a
// cache.DeletedFinalStateUnknown, which records no resourceVersion); an
// absent key is not an error.
func (s *Store) Delete(obj interface{}) error {
	return s.apply(context.Background(), "delete", []cache.Transaction{{Type: cache.TransactionTypeDelete, Object: obj}}, "")
}

// Apply applies txns in order and records rv (if empty, the last object's
// resourceVersion) in one transaction: all or nothing, across a crash too.
// Any transaction's key, type, encoding or index function error fails the
// whole batch; a failed commit leaves the previous content intact.
func (s *Store) Apply(ctx context.Context, txns []cache.Transaction, rv string) error {
	return s.apply(ctx, "apply", txns, rv)
}

func (s *Store) apply(ctx context.Context, op string, txns []cache.Transaction, rv string) error {
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	if err := s.checkWritable(op); err != nil {
		return err
	}
	ops := make([]prepared, len(txns))
	errs := parallel.ForEach(len(txns), func(i int) (err error) {
		ops[i], err = s.prepare(op, i, txns[i])
		return err
	})
	defer s.releaseEnvs(ops)
	if err := parallel.FirstError(errs); err != nil {
		return err
	}
	newRV, setRV := rv, rv != ""
	if !setRV && len(txns) > 0 {
		newRV, setRV = rvOf(txns[len(txns)-1].Object)
	}
	if len(ops) == 0 && !setRV {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return s.errClosed(op)
	}
	ix := s.indexers.Load()
	for i := range ops {
		if err := ops[i].computeValues(ix); err != nil {
			return s.errorf(op, err)
		}
	}
	return s.commitLocked(op, ix, ops, newRV, setRV)
}

// commitLocked applies ops, whose index values were computed with ix, in
// one write transaction that also records rv when setRV (invariant 1: the
// resourceVersion is written with the batch it follows, never ahead of
// it). ops is reordered by key. It is the one write path of Apply, Add,
// Update, Delete and Transaction. s.mu must be held.
func (s *Store) commitLocked(op string, ix *indexSet, ops []prepared, rv string, setRV bool) error {
	sortByKey(ops)
	s.hot.Begin()
	err := s.writeLiveWithLocked(op, s.db.updateKeepHot, func(g *layout.Generation, m *layout.Meta) error {
		delta, err := applyAll(&layout.Writer{G: g, Names: ix.names()}, ops)
		if err != nil {
			return err
		}
		m.Objects += delta
		if setRV {
			m.RV = rv
		}
		return nil
	})
	if err != nil {
		s.hot.Aborted()
		return err
	}
	// The objects just written are what a controller reads next (the
	// reconcile of the event that carried them): keep them in the hot
	// tier, which costs no decode. ops is in key order, the writes to a
	// key in their order, so the last one is kept. This also makes up for
	// the epoch updateKeepHot did not bump.
	s.hot.Committed(hotWrites(ops))
	s.db.touched(envBytes(ops))
	return nil
}

// Transaction applies txns in order in one transaction (cache.
// TransactionStore): one whose key, type, encoding or index values fail is
// skipped and reported; if the commit fails, every one is reported failed.
func (s *Store) Transaction(txns ...cache.Transaction) *cache.TransactionError {
	if len(txns) == 0 {
		return nil
	}
	fail := func(err error) *cache.TransactionError {
		return &cache.TransactionError{SuccessfulIndices: []int{}, TotalTransactions: len(txns), Errors: []error{err}}
	}
	if err := s.checkWritable("transaction"); err != nil {
		return fail(err)
	}
	var errs []error
	all := make([]prepared, len(txns))
	failed := parallel.ForEach(len(txns), func(i int) (err error) {
		all[i], err = s.prepare("transaction", i, txns[i])
		return err
	})
	ops := all[:0]
	for i := range all {
		if failed != nil && failed[i] != nil {
			errs = append(errs, failed[i])
			continue
		}
		ops = append(ops, all[i])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return fail(s.errClosed("transaction"))
	}
	ix := s.indexers.Load()
	kept := ops[:0]
	for _, p := range ops {
		if err := p.computeValues(ix); err != nil {
			errs = append(errs, s.errorf(fmt.Sprintf("transaction %d", p.pos), err))
			continue
		}
		kept = append(kept, p)
	}
	succeeded := make([]int, 0, len(kept))
	if len(kept) > 0 {
		newRV, setRV := rvOf(kept[len(kept)-1].obj)
		if err := s.commitLocked("transaction", ix, kept, newRV, setRV); err != nil {
			return fail(err)
		}
		for _, p := range kept {
			succeeded = append(succeeded, p.pos)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sort.Ints(succeeded)
	return &cache.TransactionError{SuccessfulIndices: succeeded, TotalTransactions: len(txns), Errors: errs}
}

// Bookmark records rv, even an empty one, as the store's resourceVersion,
// in its own transaction. A failure is logged: the previous
// resourceVersion, still consistent with the items, stays.
func (s *Store) Bookmark(rv string) {
	if err := s.recordRV(rv); err != nil && !errors.Is(err, ErrClosed) {
		s.logger.Error(err, "Failed to record a bookmark; the previous resourceVersion is kept", "rv", rv)
	}
}

// recordRV writes rv as the store's resourceVersion.
func (s *Store) recordRV(rv string) error {
	if err := s.checkWritable("bookmark"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return s.errClosed("bookmark")
	}
	// A bookmark changes no object: the hot tier stays valid.
	return s.writeLiveWithLocked("bookmark", s.db.updateKeepHot, func(_ *layout.Generation, m *layout.Meta) error {
		m.RV = rv
		return nil
	})
}

// LastStoreSyncResourceVersion returns the recorded resourceVersion ("" after
// Close).
func (s *Store) LastStoreSyncResourceVersion() string {
	if s.closed.Load() {
		return ""
	}
	return s.status.Load().meta.RV
}

// Replace replaces the whole content with list and records rv, atomically,
// through BeginReplace. An error leaves the store unchanged. The store does
// not keep list.
func (s *Store) Replace(list []interface{}, rv string) error {
	ctx := context.Background()
	r, err := s.BeginReplace(ctx)
	if err != nil {
		return err
	}
	for len(list) > 0 {
		n := min(len(list), replacePage)
		if err := r.Add(ctx, list[:n]...); err != nil {
			_ = r.Abort()
			return err
		}
		list = list[n:]
	}
	if err := r.Commit(ctx, rv); err != nil {
		_ = r.Abort()
		return err
	}
	return r.Release()
}

// replacePage is the number of objects cache.Store's Replace writes per
// transaction.
const replacePage = 1000

// Resync does nothing, as in client-go; it returns ErrClosed after Close.
func (s *Store) Resync() error {
	if s.closed.Load() {
		return s.errClosed("resync")
	}
	return nil
}

// State reports the recorded resourceVersion, whether the content is
// complete, what the open found and the number of objects.
func (s *Store) State() (store.State, error) {
	if s.closed.Load() {
		return store.State{}, s.errClosed("state")
	}
	st := s.status.Load()
	return store.State{
		ResourceVersion:   st.meta.RV,
		Complete:          st.meta.State == layout.StateComplete,
		RelistInterrupted: st.relistInterrupted,
		Discarded:         st.discarded,
		Objects:           int(st.meta.Objects),
	}, nil
}

// Identity returns the store's identity, canonicalised.
func (s *Store) Identity() Identity { return s.id }

// GetIndexers returns a copy of the store's indexers (nil after Close).
func (s *Store) GetIndexers() cache.Indexers {
	if s.closed.Load() {
		return nil
	}
	ix := s.indexers.Load()
	out := make(cache.Indexers, len(ix.list))
	for _, i := range ix.list {
		out[i.name] = i.fn
	}
	return out
}

// Close releases the store, aborting an open Replace (an open fill stays
// for the next open to delete); other methods return ErrClosed afterwards.
// The DB stays open. Close may be called again.
func (s *Store) Close() error { return s.close(true) }

// close closes s; unregister removes it from the DB's open stores (false
// when the DB is closing and does that itself).
func (s *Store) close(unregister bool) error {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return nil
	}
	r := s.replace
	s.replace, s.fill = nil, nil
	s.hot.Clear()
	s.releaseLocked()
	var err error
	if r != nil && !s.readOnly {
		err = s.abortLocked(r)
	}
	s.mu.Unlock()
	if unregister {
		s.db.mu.Lock()
		if s.db.stores[s.name] == s {
			delete(s.db.stores, s.name)
		}
		s.db.mu.Unlock()
	}
	return err
}

// hotWrites returns the writes of ops as the hot tier takes them.
func hotWrites(ops []prepared) iter.Seq[hot.Write] {
	return func(yield func(hot.Write) bool) {
		for i := range ops {
			op := &ops[i]
			if !yield(hot.Write{Key: op.Key, Delete: op.Delete, Sum: op.sum, EnvLen: len(op.Env), Obj: op.obj}) {
				return
			}
		}
	}
}
