package memory

import (
	"context"
	"fmt"

	"github.com/warmcache/warmcache/store"
)

// fill is an open fill of a Store (store.Filler): its Add writes to the
// current content. Whether it is still open is store state, read under
// the store's lock.
type fill struct {
	s *Store
}

var _ store.Filler = (*Store)(nil)

// BeginFill starts a fill of the store, which must be empty (else an error
// wrapping store.ErrNotEmpty); see store.Filler. Until the fill commits,
// State reports the store incomplete with no resourceVersion. A
// BeginReplace or BeginFill while a fill or a replace is open returns an
// error wrapping store.ErrReplaceInProgress.
func (s *Store) BeginFill(ctx context.Context) (store.Fill, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: begin fill: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, errClosed("begin fill")
	case s.replace != nil || s.fill != nil:
		return nil, fmt.Errorf("memory: begin fill: %w", store.ErrReplaceInProgress)
	case len(s.cur.items) > 0:
		return nil, fmt.Errorf("memory: begin fill: %d objects stored: %w", len(s.cur.items), store.ErrNotEmpty)
	}
	s.releaseLocked()
	f := &fill{s: s}
	s.fill = f
	s.rv, s.complete = "", false
	return f, nil
}

// openErrLocked returns nil while f is the store's open fill.
func (f *fill) openErrLocked(op string) error {
	switch {
	case f.s.closed:
		return errClosed("fill " + op)
	case f.s.fill != f:
		return fmt.Errorf("memory: fill %s: %w", op, store.ErrReplaceDone)
	}
	return nil
}

// Add writes objs to the current content. A key or index function error
// writes none of objs and leaves the fill open. A key added twice keeps
// the last object.
func (f *fill) Add(ctx context.Context, objs ...interface{}) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: fill add: %w", err)
	}
	s := f.s
	keys := make([]string, len(objs))
	for i, obj := range objs {
		key, err := s.keyOf("fill add", obj)
		if err != nil {
			return err
		}
		keys[i] = key
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := f.openErrLocked("add"); err != nil {
		return err
	}
	// Index values are computed under the lock, with the store's current
	// indexers, as a write's are.
	keyed := make([]keyedTxn, len(objs))
	slab := make([][]string, len(objs)*len(s.indexers))
	for i, obj := range objs {
		var values [][]string
		var err error
		if values, slab, err = indexValues(slab, s.indexers, keys[i], obj); err != nil {
			return fmt.Errorf("memory: fill add: %w", err)
		}
		keyed[i] = keyedTxn{key: keys[i], obj: obj, values: values}
	}
	for _, t := range keyed {
		s.applyLocked(t)
	}
	return nil
}

// Commit records rv and marks the store complete.
func (f *fill) Commit(ctx context.Context, rv string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: fill commit: %w", err)
	}
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := f.openErrLocked("commit"); err != nil {
		return err
	}
	s.rv, s.complete, s.fill = rv, true, nil
	return nil
}

// Abort ends the fill and keeps the added objects, the store still
// incomplete. It is a no-op after Commit, Abort or Close.
func (f *fill) Abort() error {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fill == f {
		s.fill = nil
	}
	return nil
}
