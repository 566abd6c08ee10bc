package bolt

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/changes"
	"github.com/warmcache/warmcache/store/bolt/internal/decode"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// changesWalk bounds the item entries Changes walks per read transaction,
// changed or not, so that a transaction stays short when few keys changed.
const changesWalk = 16 * scanChunk

// Changes calls fn, in key order, for every key that differs between the
// generation Commit replaced (retained in the file until Release) and the
// live one; see store.Replace. It merge-walks the two generations' items
// in chunks of at most scanChunk changes (changesWalk entries), each in its
// own read transaction, compares resourceVersions from the envelopes
// without decoding, decodes only the objects of changed keys, on every
// core (without filling or reordering the hot tier), and calls fn outside
// any transaction. A retained object that cannot be decoded is logged:
// its live object, if any, is told as an add (Old nil), and a vanished one
// is skipped; a live one stops Changes with an error wrapping ErrCorrupt
// and marks the resource incomplete.
func (r *replaceTx) Changes(ctx context.Context, fn store.ChangeFunc) error {
	return r.changes(ctx, false, fn)
}

// ChangesShared implements store.SharedChanges: Changes, with the Old of
// each key in both generations decoded sharing with its New what the two
// encode alike, when the store's codec can (decode.SharingWithStored).
func (r *replaceTx) ChangesShared(ctx context.Context, fn store.ChangeFunc) error {
	return r.changes(ctx, true, fn)
}

func (r *replaceTx) changes(ctx context.Context, share bool, fn store.ChangeFunc) error {
	const op = "replace changes"
	s := r.s
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return s.errorf(op, err)
		}
		if err := r.retainedErr(op); err != nil {
			return err
		}
		var chunk []store.Change
		var bad []keyError
		var liveBad *keyError
		done := true
		err := s.readLive(op, func(live *layout.Generation) error {
			old, err := layout.OpenGeneration(live.B.Tx().Bucket(s.bname), r.old)
			if err != nil {
				if rerr := r.retainedErr(op); rerr != nil {
					return rerr
				}
				return fmt.Errorf("%w: retained generation: %w", ErrCorrupt, err)
			}
			w := changeWalk{s: s, share: share}
			var walkBad *changes.Bad
			after, done, walkBad = changes.Walk(old, live, after, scanChunk, changesWalk, &w)
			// The changes found before a live envelope that is
			// unreadable are decoded all the same: one of them that
			// does not decode comes first.
			if chunk, liveBad = w.read(); liveBad == nil && walkBad != nil {
				liveBad = &keyError{walkBad.Key, walkBad.Err}
			}
			bad = w.bad
			return nil
		})
		if err != nil {
			return err
		}
		// In key order: the walk found some, the decode the others.
		slices.SortStableFunc(bad, func(a, b keyError) int { return strings.Compare(a.key, b.key) })
		for _, b := range bad {
			if liveBad != nil && b.key >= liveBad.key {
				break // not reached
			}
			s.logger.Error(b.err, "A replaced object cannot be decoded; its live object is told as an add, or nothing if it vanished", "key", b.key)
		}
		if liveBad != nil {
			s.corrupted(op, []keyError{*liveBad})
			return s.errorf(op, liveBad.err)
		}
		for _, c := range chunk {
			if err := ctx.Err(); err != nil {
				return s.errorf(op, err)
			}
			if err := fn(c); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// retainedErr returns nil while r's replaced generation is retained.
func (r *replaceTx) retainedErr(op string) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed.Load():
		return s.errClosed(op)
	case s.retained != r:
		return s.errorf(op, store.ErrReplaceDone)
	}
	return nil
}

// changeWalk is one chunk of Changes' merge walk, in one read
// transaction: changes.Walk finds the changed keys and their objects'
// envelopes (a changes.Visitor), read decodes those with the read path's
// machinery (decodeSelected).
type changeWalk struct {
	s     *Store
	share bool // decode an updated key's Old sharing with its New
	// bad are retained objects that did not decode.
	bad []keyError
	// found are the changes walk found, in key order; olds and news
	// their replaced and live objects, in key order too.
	found      []foundChange
	olds, news []selected
}

// foundChange is a change walk found: the indexes of its replaced and
// live objects in olds and news (-1: none, or a replaced one that is
// unreadable), and the live object's envelope when that object is decoded
// from it (not the hot tier's), as the message the replaced one is decoded
// sharing with. lenv aliases the read transaction.
type foundChange struct {
	key      string
	old, new int
	lenv     []byte
}

// Unreadable records the retained object of key k, unreadable.
func (w *changeWalk) Unreadable(k []byte, err error) {
	w.bad = append(w.bad, keyError{string(k), err})
}

// Change records a change of key k, whose replaced and live objects have
// envelopes oenv and lenv (nil: none).
func (w *changeWalk) Change(k, oenv, lenv []byte) {
	f := foundChange{key: string(k), old: -1, new: -1}
	if oenv != nil {
		f.old = len(w.olds)
		w.olds = append(w.olds, w.s.selectedOf(f.key, k, oenv))
	}
	if lenv != nil {
		f.new = len(w.news)
		c := w.s.selectedOf(f.key, k, lenv)
		if c.env != nil {
			f.lenv = lenv
		}
		w.news = append(w.news, c)
	}
	w.found = append(w.found, f)
}

// read decodes the objects of the changes walk found, on every core: the
// live ones, then the replaced ones, each sharing with its live one when
// w.share and that one was decoded from its envelope (the hot tier may
// hold the object a write encoded, which need not be what its message
// decodes to). It returns the changes in key order, or the first live
// object that did not decode. A replaced object that did not decode is
// recorded in bad; its change becomes an add, or nothing for a vanished
// key. It must run inside the read transaction.
func (w *changeWalk) read() ([]store.Change, *keyError) {
	if bad := firstBad(w.news, w.s.decodeSelected(w.news, 0)); bad != nil {
		return nil, bad
	}
	if w.share {
		for _, f := range w.found {
			if f.old >= 0 && f.lenv != nil && w.olds[f.old].env != nil {
				// Here, in the transaction's goroutine, a fault
				// reading lenv is recovered by the transaction (view).
				w.olds[f.old].share = decode.SharingWithStored(w.s.codec, w.news[f.new].obj, f.lenv)
			}
		}
	}
	oldErrs := w.s.decodeSelected(w.olds, 0)
	out := make([]store.Change, 0, len(w.found))
	for _, f := range w.found {
		ch := store.Change{Key: f.key}
		if f.new >= 0 {
			ch.New = w.news[f.new].obj
		}
		if f.old >= 0 {
			if oldErrs != nil && oldErrs[f.old] != nil {
				w.bad = append(w.bad, keyError{f.key, oldErrs[f.old]})
				if f.new < 0 {
					continue // vanished, and unreadable: skipped
				}
			} else {
				ch.Old = w.olds[f.old].obj
			}
		}
		out = append(out, ch)
	}
	w.found, w.olds, w.news = nil, nil, nil
	return out, nil
}

// releaseLocked deletes the generation retained by the committed Replace,
// if any, in one write transaction. A failure is logged: the next open
// deletes it. s.mu must be held.
func (s *Store) releaseLocked() {
	r := s.retained
	if r == nil {
		return
	}
	s.retained = nil
	if s.readOnly {
		return
	}
	if err := s.deleteGenerationLocked(r.old); err != nil {
		s.logger.Error(err, "Failed to delete the replaced generation; the next open deletes it", "generation", r.old)
	}
}

// Release deletes the generation Commit replaced. It is a no-op before
// Commit, after Release or Abort, and after Close.
func (r *replaceTx) Release() error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retained == r && !s.closed.Load() {
		s.releaseLocked()
	}
	return nil
}
