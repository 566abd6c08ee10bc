package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/warmcache/warmcache/store"
)

// replace is an open relist of a Store. Its staged content is private to it
// (Replace methods are not safe for concurrent use with each other), so it
// is built without the store's lock; whether the replace is still open is
// store state, read under the store's lock.
type replace struct {
	s *Store
	// indexers is the store's indexer slice when the replace began.
	// AddIndexers is refused while a replace is open, so it is still the
	// store's at Commit.
	indexers []indexer
	staged   *content
	// old is the content Commit replaced, kept for Changes until Release;
	// nil before Commit and after Release. Nothing modifies it: writes
	// go to the content Commit installed. Guarded by s.mu.
	old *content
}

// BeginReplace starts a relist; see store.Store. Objects added to it are
// indexed as they are staged, so Commit only swaps content. A second
// BeginReplace while one (or a Fill) is open returns
// store.ErrReplaceInProgress; one
// after a Commit releases the content that Commit retained.
func (s *Store) BeginReplace(ctx context.Context) (store.Replace, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: begin replace: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed("begin replace")
	}
	if s.replace != nil || s.fill != nil {
		return nil, fmt.Errorf("memory: begin replace: %w", store.ErrReplaceInProgress)
	}
	s.releaseLocked()
	r := &replace{s: s, indexers: s.indexers, staged: newContent(len(s.indexers), len(s.cur.items))}
	s.replace = r
	return r, nil
}

// openErr returns nil while r is the store's open replace, store.ErrClosed
// after Close and store.ErrReplaceDone after Commit or Abort.
func (r *replace) openErr(op string) error {
	r.s.mu.RLock()
	defer r.s.mu.RUnlock()
	return r.openErrLocked(op)
}

func (r *replace) openErrLocked(op string) error {
	switch {
	case r.s.closed:
		return errClosed("replace " + op)
	case r.s.replace != r:
		return fmt.Errorf("memory: replace %s: %w", op, store.ErrReplaceDone)
	}
	return nil
}

// Add stages objs. A key or index function error stages none of objs and
// leaves the replace open. A key staged twice keeps the last object.
func (r *replace) Add(ctx context.Context, objs ...interface{}) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: replace add: %w", err)
	}
	if err := r.openErr("add"); err != nil {
		return err
	}
	keyed := make([]keyedTxn, len(objs))
	slab := make([][]string, len(objs)*len(r.indexers))
	for i, obj := range objs {
		key, err := r.s.keyOf("replace add", obj)
		if err != nil {
			return err
		}
		var values [][]string
		if values, slab, err = indexValues(slab, r.indexers, key, obj); err != nil {
			return fmt.Errorf("memory: replace add: %w", err)
		}
		keyed[i] = keyedTxn{key: key, obj: obj, values: values}
	}
	for _, t := range keyed {
		r.staged.put(t.key, t.obj, t.values)
	}
	return nil
}

// Vanished calls fn, in key order, for every object of the current content
// whose key was not staged. fn runs without the store's lock held.
func (r *replace) Vanished(ctx context.Context, fn store.ScanFunc) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: replace vanished: %w", err)
	}
	r.s.mu.RLock()
	if err := r.openErrLocked("vanished"); err != nil {
		r.s.mu.RUnlock()
		return err
	}
	var gone []keyValue
	for k, e := range r.s.cur.items {
		if _, ok := r.staged.items[k]; !ok {
			gone = append(gone, keyValue{k, e.obj})
		}
	}
	r.s.mu.RUnlock()
	return callSorted(ctx, "replace vanished", gone, fn)
}

// Commit installs the staged content and rv and marks the store complete.
// The replaced content is kept for Changes until Release.
func (r *replace) Commit(ctx context.Context, rv string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: replace commit: %w", err)
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := r.openErrLocked("commit"); err != nil {
		return err
	}
	r.old, s.cur = s.cur, r.staged
	s.rv = rv
	s.complete = true
	s.replace = nil
	s.retained = r
	r.staged = nil
	return nil
}

// Changes calls fn, in key order, for every key that differs between the
// content Commit replaced and the current one; see store.Replace. The
// differences are collected under the store's read lock (pointers to
// objects the store holds anyway) and fn is called without it.
func (r *replace) Changes(ctx context.Context, fn store.ChangeFunc) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: replace changes: %w", err)
	}
	s := r.s
	s.mu.RLock()
	switch {
	case s.closed:
		s.mu.RUnlock()
		return errClosed("replace changes")
	case s.retained != r:
		s.mu.RUnlock()
		return fmt.Errorf("memory: replace changes: %w", store.ErrReplaceDone)
	}
	var changes []store.Change
	for k, e := range s.cur.items {
		o, ok := r.old.items[k]
		switch {
		case !ok:
			changes = append(changes, store.Change{Key: k, New: e.obj})
		case !sameResourceVersion(o.obj, e.obj):
			changes = append(changes, store.Change{Key: k, Old: o.obj, New: e.obj})
		}
	}
	for k, o := range r.old.items {
		if _, ok := s.cur.items[k]; !ok {
			changes = append(changes, store.Change{Key: k, Old: o.obj})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(changes, func(a, b store.Change) int { return strings.Compare(a.Key, b.Key) })
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memory: replace changes: %w", err)
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// Release drops the content Commit retained. It is a no-op before
// Commit, after Release or Abort, and after Close.
func (r *replace) Release() error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retained == r {
		s.releaseLocked()
	}
	return nil
}

// releaseLocked drops the retained content, if any. s.mu must be held.
func (s *Store) releaseLocked() {
	if s.retained != nil {
		s.retained.old = nil
		s.retained = nil
	}
}

// Abort discards the staged content, or after Commit releases the
// retained content. It is a no-op after Release, Abort or Close.
func (r *replace) Abort() error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replace == r {
		s.replace = nil
	}
	if s.retained == r {
		s.releaseLocked()
	}
	r.staged = nil
	return nil
}

// sameResourceVersion reports whether a and b have the same
// resourceVersion.
func sameResourceVersion(a, b interface{}) bool {
	ra, okA := rvOf(a)
	rb, okB := rvOf(b)
	// Objects without metadata (a transform may store anything) have no
	// resourceVersion to compare: they count as changed, as client-go's
	// informer tells a relisted object it cannot compare as an update to
	// every handler.
	return okA && okB && ra == rb
}
