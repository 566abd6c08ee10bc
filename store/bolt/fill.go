package bolt

import (
	"context"
	"fmt"
	"time"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// fillTx is an open fill (store.Filler): each Add writes a page to the
// live generation in its own transaction, and the resource's meta records
// layout.StateFilling from BeginFill until Commit (or a committed Replace
// after an Abort), so that an open after a crash discards the content
// (see repair). Its fields other than s are immutable.
type fillTx struct {
	s *Store
	// ix is the indexer set the pages are indexed with; AddIndexers is
	// refused while a fill is open.
	ix *indexSet
}

var (
	_ store.Filler = (*Store)(nil)
	_ store.Fill   = (*fillTx)(nil)
)

// BeginFill starts a fill of the resource, which must hold no object
// (store.ErrNotEmpty); see store.Filler. Until Commit, State reports the
// content incomplete with no resourceVersion, and an open after a crash
// deletes it (State().RelistInterrupted). A Replace or fill already open is
// store.ErrReplaceInProgress.
func (s *Store) BeginFill(ctx context.Context) (store.Fill, error) {
	const op = "begin fill"
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.beginLocked(ctx, op); err != nil {
		return nil, err
	}
	if s.meta.Objects != 0 {
		return nil, s.errorf(op, fmt.Errorf("%d objects stored: %w", s.meta.Objects, store.ErrNotEmpty))
	}
	s.releaseLocked()
	err := s.writeLiveLocked(op, func(g *layout.Generation, m *layout.Meta) error {
		if k, _ := g.Items.Cursor().First(); k != nil {
			// The count says empty, the items do not: a damaged meta.
			return fmt.Errorf("%w: items stored but none counted", ErrCorrupt)
		}
		m.RV, m.State, m.Reason = "", layout.StateFilling, ""
		return nil
	})
	if err != nil {
		return nil, err
	}
	f := &fillTx{s: s, ix: s.indexers.Load()}
	s.fill = f
	return f, nil
}

// openErrLocked returns nil while f is the store's open fill. s.mu must
// be held.
func (f *fillTx) openErrLocked(op string) error {
	switch {
	case f.s.closed.Load():
		return f.s.errClosed(op)
	case f.s.fill != f:
		return f.s.errorf(op, store.ErrReplaceDone)
	}
	return nil
}

// Add writes objs to the live generation in one write transaction, with
// the object count; readers see them once it returns. A key, encoding or
// index function error writes none of objs and leaves the fill open. A
// key added twice keeps the last object. The hot tier is not filled, as
// by a Replace.
func (f *fillTx) Add(ctx context.Context, objs ...interface{}) error {
	const op = "fill add"
	s := f.s
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	ops, err := s.prepareAdds(op, objs, f.ix)
	if err != nil {
		return err
	}
	defer s.releaseEnvs(ops)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := f.openErrLocked(op); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	sortByKey(ops)
	err = s.writeLiveLocked(op, func(g *layout.Generation, m *layout.Meta) error {
		delta, err := applyAll(&layout.Writer{G: g, Names: f.ix.names()}, ops)
		m.Objects += delta
		return err
	})
	if err == nil {
		s.db.touched(envBytes(ops))
	}
	return err
}

// Commit records rv and the complete state in one write transaction. A
// failed commit leaves the fill open.
func (f *fillTx) Commit(ctx context.Context, rv string) error {
	const op = "fill commit"
	s := f.s
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := f.openErrLocked(op); err != nil {
		return err
	}
	err := s.writeLiveLocked(op, func(_ *layout.Generation, m *layout.Meta) error {
		m.RV, m.State, m.Reason, m.Relisted = rv, layout.StateComplete, "", time.Now().UnixNano()
		return nil
	})
	if err != nil {
		return err
	}
	s.fill = nil
	st := *s.status.Load()
	st.relistInterrupted = false
	s.status.Store(&st)
	return nil
}

// Abort ends the fill; the content stays, recorded as StateFilling, until
// a Replace commits (or an open after a crash deletes it). It writes
// nothing and is a no-op after Commit, Abort or Close.
func (f *fillTx) Abort() error {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fill == f {
		s.fill = nil
	}
	return nil
}
