package bolt

import (
	"bytes"
	"context"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/parallel"
)

// replaceTx is an open relist: a staging generation written by Add, one
// bbolt transaction per call, and made live by Commit. Its fields other
// than s are guarded by s.mu.
type replaceTx struct {
	s   *Store
	gen uint64
	// ix is the indexer set the staging generation is built with;
	// AddIndexers is refused while a Replace is open.
	ix      *indexSet
	objects int64 // objects staged so far
	// old is the generation Commit replaced, retained for Changes until
	// Release; 0 before Commit.
	old uint64
}

var (
	_ store.Replace       = (*replaceTx)(nil)
	_ store.SharedChanges = (*replaceTx)(nil)
)

// beginLocked checks that a relist or a fill may begin: ctx not done, the
// store open and writable, no Replace or fill open. s.mu must be held.
func (s *Store) beginLocked(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	if err := s.checkWritable(op); err != nil {
		return err
	}
	if s.replace != nil || s.fill != nil {
		return s.errorf(op, store.ErrReplaceInProgress)
	}
	return nil
}

// BeginReplace starts a relist into a staging generation; readers see the
// previous content until Commit, and an open after a crash before Commit
// deletes the staged data (State().RelistInterrupted). A Replace or fill
// already open is store.ErrReplaceInProgress.
func (s *Store) BeginReplace(ctx context.Context) (store.Replace, error) {
	const op = "begin replace"
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.beginLocked(ctx, op); err != nil {
		return nil, err
	}
	s.releaseLocked()
	r := &replaceTx{s: s, ix: s.indexers.Load()}
	m := s.meta.Clone()
	err := s.db.update(op, func(tx *bbolt.Tx) error {
		res, err := s.resourceBucket(tx)
		if err != nil {
			return err
		}
		r.gen = m.NextGen
		m.NextGen++
		m.Staging = r.gen
		if _, err := layout.CreateGeneration(res, r.gen, r.ix.names()); err != nil {
			return err
		}
		return layout.PutMeta(res, &m)
	})
	if err != nil {
		return nil, s.errorf(op, err)
	}
	s.setMetaLocked(m)
	s.replace = r
	return r, nil
}

// openErrLocked returns nil while r is the store's open Replace. s.mu must
// be held.
func (r *replaceTx) openErrLocked(op string) error {
	switch {
	case r.s.closed.Load():
		return r.s.errClosed(op)
	case r.s.replace != r:
		return r.s.errorf(op, store.ErrReplaceDone)
	}
	return nil
}

// writeStagingLocked runs fn on the staging generation in a write
// transaction. s.mu must be held.
func (r *replaceTx) writeStagingLocked(op string, fn func(res *bbolt.Bucket, g *layout.Generation) error) error {
	return r.s.db.update(op, func(tx *bbolt.Tx) error {
		res, err := r.s.resourceBucket(tx)
		if err != nil {
			return err
		}
		g, err := layout.OpenGeneration(res, r.gen)
		if err != nil {
			return fmt.Errorf("%w: staging: %w", ErrCorrupt, err)
		}
		return fn(res, g)
	})
}

// Add stages objs in one write transaction. A key, encoding or index
// function error stages none of objs and leaves the Replace open. A key
// staged twice keeps the last object.
func (r *replaceTx) Add(ctx context.Context, objs ...interface{}) error {
	const op = "replace add"
	s := r.s
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	ops, err := s.prepareAdds(op, objs, r.ix)
	if err != nil {
		return err
	}
	defer s.releaseEnvs(ops)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := r.openErrLocked(op); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	sortByKey(ops)
	var added int64
	err = r.writeStagingLocked(op, func(_ *bbolt.Bucket, g *layout.Generation) error {
		var err error
		added, err = applyAll(&layout.Writer{G: g, Names: r.ix.names()}, ops)
		return err
	})
	if err != nil {
		return s.errorf(op, err)
	}
	r.objects += added
	s.db.touched(envBytes(ops))
	return nil
}

// Vanished calls fn, in key order, for every object of the live content
// whose key was not staged, with its last stored state. It merge-walks the
// live and staged keys in chunks of scanChunk vanished objects, each chunk
// in its own read transaction, and calls fn outside any transaction. A
// vanished object that cannot be decoded is logged and skipped (it is
// being replaced anyway).
func (r *replaceTx) Vanished(ctx context.Context, fn store.ScanFunc) error {
	const op = "replace vanished"
	s := r.s
	s.mu.Lock()
	err := r.openErrLocked(op)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return s.errorf(op, err)
		}
		chunk := make([]selected, 0, scanChunk)
		var bad []keyError
		done := true
		err := s.readLive(op, func(live *layout.Generation) error {
			err := r.vanishedChunk(live, &after, &chunk, &bad, &done)
			// Decode what was collected on every core, inside the
			// transaction the envelopes alias.
			for i, err := range s.decodeSelected(chunk, 0) {
				if err != nil {
					bad = append(bad, keyError{chunk[i].key, err})
					chunk[i].obj, chunk[i].k = nil, nil
				}
			}
			return err
		})
		if err != nil {
			return err
		}
		for _, b := range bad {
			s.logger.Error(b.err, "Skipping a vanished object that cannot be decoded; no deletion is reported for it", "key", b.key)
		}
		for _, c := range chunk {
			if err := ctx.Err(); err != nil {
				return s.errorf(op, err)
			}
			if c.obj == nil {
				continue
			}
			if err := fn(c.key, c.obj); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// vanishedChunk collects in chunk, up to scanChunk, the live items after
// *after that were not staged, with their envelopes (aliasing live's
// transaction) or the object the hot tier holds; items whose envelope
// cannot be read go to bad. It clears *done if items remain.
func (r *replaceTx) vanishedChunk(live *layout.Generation, after *[]byte, chunk *[]selected, bad *[]keyError, done *bool) error {
	s := r.s
	staged, err := layout.OpenGeneration(live.B.Tx().Bucket(s.bname), r.gen)
	if err != nil {
		return fmt.Errorf("%w: staging: %w", ErrCorrupt, err)
	}
	lc, sc := live.Items.Cursor(), staged.Items.Cursor()
	lk, lv := layout.SeekAfter(lc, *after)
	sk, _ := sc.Seek(lk)
	for ; lk != nil; lk, lv = lc.Next() {
		for sk != nil && bytes.Compare(sk, lk) < 0 {
			sk, _ = sc.Next()
		}
		if sk != nil && bytes.Equal(sk, lk) {
			*after = append((*after)[:0], lk...)
			continue
		}
		if len(*chunk) == scanChunk {
			*done = false // resume at lk, after the last key handled
			return nil
		}
		*after = append((*after)[:0], lk...)
		env, err := live.EnvelopeOf(lk, lv)
		if err != nil {
			*bad = append(*bad, keyError{string(lk), err})
			continue
		}
		*chunk = append(*chunk, s.selectedOf(string(lk), lk, env))
	}
	return nil
}

// Commit makes the staged generation live and records rv and the complete
// state, in one write transaction (which ends the StateFilling of a fill
// aborted before it). The replaced generation stays in the
// file, for Changes, until Release deletes it (a crash before that leaves
// it for the next open to delete; nothing reads it then). A failed commit
// leaves the previous content, rv and the Replace open: the caller may
// retry or Abort.
func (r *replaceTx) Commit(ctx context.Context, rv string) error {
	const op = "replace commit"
	s := r.s
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := r.openErrLocked(op); err != nil {
		return err
	}
	m := s.meta.Clone()
	var old uint64
	err := r.writeStagingLocked(op, func(res *bbolt.Bucket, _ *layout.Generation) error {
		var err error
		if old, err = layout.LiveGen(res); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if err := res.Put(layout.LiveKey, layout.LiveValue(r.gen)); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		m.RV, m.State, m.Reason = rv, layout.StateComplete, ""
		m.Objects, m.Staging, m.Relisted = r.objects, 0, now
		return layout.PutMeta(res, &m)
	})
	if err != nil {
		return s.errorf(op, err)
	}
	s.replace = nil
	r.old, s.retained = old, r
	s.setMetaLocked(m)
	st := *s.status.Load()
	st.relistInterrupted = false
	s.status.Store(&st)
	return nil
}

// deleteGenerationLocked deletes generation gen of the resource in one
// write transaction. s.mu must be held.
//
// One DeleteBucket is the cheapest way: it frees the pages without
// rewriting them. Measured on 10k podgen pods (about 40 MB of payload,
// SyncFull): 150 ms in one transaction, against 1.07 s in total when the
// keys are deleted 5000 per transaction, each of which still takes about
// 180 ms. So the deletion is one transaction, which blocks other writes to
// the file for about 15 ms per 1000 such pods.
func (s *Store) deleteGenerationLocked(gen uint64) error {
	return s.db.update("delete generation", func(tx *bbolt.Tx) error {
		res, err := s.resourceBucket(tx)
		if err != nil {
			return err
		}
		gens := res.Bucket(layout.GenBucket)
		if gens == nil {
			return fmt.Errorf("%w: generations bucket missing", ErrCorrupt)
		}
		return gens.DeleteBucket(layout.GenName(gen))
	})
}

// Abort discards the staged objects; the content is unchanged. After
// Commit it releases the retained generation, as Release does. It is a
// no-op after Release, Abort or Close. If the staged data cannot be
// deleted now (disk full), the Replace is still ended and the next open
// deletes it.
func (r *replaceTx) Abort() error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil
	}
	if s.retained == r {
		s.releaseLocked()
		return nil
	}
	if s.replace != r {
		return nil
	}
	s.replace = nil
	return s.abortLocked(r)
}

// abortLocked deletes r's staging generation and clears it from the meta.
// s.mu must be held and r no longer be s.replace.
func (s *Store) abortLocked(r *replaceTx) error {
	m := s.meta.Clone()
	err := s.db.update("replace abort", func(tx *bbolt.Tx) error {
		res, err := s.resourceBucket(tx)
		if err != nil {
			return err
		}
		if gens := res.Bucket(layout.GenBucket); gens != nil && gens.Bucket(layout.GenName(r.gen)) != nil {
			if err := gens.DeleteBucket(layout.GenName(r.gen)); err != nil {
				return err
			}
		}
		m.Staging = 0
		return layout.PutMeta(res, &m)
	})
	if err != nil {
		return s.errorf("replace abort", err)
	}
	s.setMetaLocked(m)
	return nil
}

// prepareAdds keys, encodes and indexes objs for a relist's or a fill's
// Add, on every core, in a slice in the order of objs. A key, encoding or
// index function error is returned for the first object that has one.
func (s *Store) prepareAdds(op string, objs []interface{}, ix *indexSet) ([]prepared, error) {
	ops := make([]prepared, len(objs))
	errs := parallel.ForEach(len(objs), func(i int) error {
		obj := objs[i]
		key, err := s.key(obj)
		if err != nil {
			return s.errorf(op, err)
		}
		env, err := s.encode(key, obj)
		if err != nil {
			return s.errorf(fmt.Sprintf("%s: key %q", op, key), err)
		}
		ops[i] = prepared{pos: i, obj: obj, Write: layout.Write{Key: key, Env: env, Sel: layout.AppendSelectPart(nil, key, obj)}}
		if err := ops[i].computeValues(ix); err != nil {
			return s.errorf(op, err)
		}
		return nil
	})
	if err := parallel.FirstError(errs); err != nil {
		return nil, err
	}
	return ops, nil
}
