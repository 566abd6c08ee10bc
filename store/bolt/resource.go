package bolt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/recorded"
)

// Resource opens the store of one resource in db, creating it if the file
// does not hold it. Data recorded with another schema version, identity,
// codec, type fingerprint, cluster or transform version is discarded (State
// says why), an interrupted relist's staged data deleted (the previous
// content kept), and other index names or IndexVersion rebuild the index
// entries. At most one Store per identity may be open on a DB
// (ErrResourceInUse). On a read-only DB, data that would have to be
// discarded or rebuilt makes it fail with ErrReadOnly.
func (db *DB) Resource(ctx context.Context, opts ResourceOptions) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("bolt: resource: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: resource: %w", err)
	}
	list := make([]indexer, 0, len(opts.Indexers))
	for name, fn := range opts.Indexers {
		list = append(list, indexer{name: name, fn: fn})
	}
	s := &Store{
		db:        db,
		id:        opts.Identity,
		name:      opts.Identity.String(),
		codec:     opts.Codec,
		typeHash:  recorded.Fingerprint(opts.Prototype, opts.Identity.Group, opts.Identity.Version, opts.Identity.Kind),
		cluster:   opts.Cluster,
		transform: opts.TransformVersion,
		keyFunc:   opts.KeyFunc,
		onCorrupt: opts.OnCorruption,
		readOnly:  db.opts.ReadOnly,
	}
	tier := db.hot
	if opts.HotBytes != nil {
		tier = hot.New(*opts.HotBytes)
	}
	if tier != nil { // no series for a store without a tier
		s.hot = tier.Part(opts.Codec.Name(), db.metrics.Hot(s.name), &db.hotEpoch)
	}
	s.bname = []byte(s.name)
	s.logger = db.logger.WithValues("resource", s.name)
	s.indexers.Store(newIndexSet(list))
	if err := db.register(s); err != nil {
		return nil, err
	}
	if err := s.open(ctx, opts.IndexVersion); err != nil {
		db.unregister(s)
		return nil, err
	}
	if p := db.corrupt.Load(); p != nil {
		s.fileCorrupted(*p) // found before s was registered, or while it opened (told once): see reportCorrupt
	}
	return s, nil
}

func (db *DB) register(s *Store) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return fmt.Errorf("bolt: resource %s: %w", s.name, ErrClosed)
	}
	if _, ok := db.stores[s.name]; ok || db.dropping[s.name] {
		return fmt.Errorf("bolt: resource %s: %w", s.name, ErrResourceInUse)
	}
	db.stores[s.name] = s
	return nil
}

func (db *DB) unregister(s *Store) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.stores[s.name] == s {
		delete(db.stores, s.name)
	}
}

// open checks and repairs the resource's recorded data and loads its meta.
func (s *Store) open(ctx context.Context, indexVersion string) error {
	want := recorded.Want{
		Bucket: s.bname, Identity: s.id.recorded(), Codec: s.codec, TypeHash: s.typeHash, Cluster: s.cluster, TransformVersion: s.transform,
		Indexes: s.indexers.Load().names(), IndexVersion: indexVersion, Corrupt: s.countCorrupt,
	}
	var f recorded.Findings
	var err error
	if s.readOnly {
		err = s.db.view("open resource", func(tx *bbolt.Tx) error {
			f, err = recorded.Read(tx, want)
			return err
		})
	} else {
		err = s.db.update("open resource", func(tx *bbolt.Tx) error {
			f, err = recorded.Repair(tx, want)
			return err
		})
	}
	if err != nil {
		return s.errorf("open", err)
	}
	if f.Discarded != "" {
		s.logger.Info("Discarded the cached data of the resource; it will be relisted", "reason", f.Discarded)
	}
	if f.Resealed > 0 {
		s.logger.Info("Some cached objects are sealed with an older key; the resource will be relisted to rewrite them with the current key", "objects", f.Resealed)
	}
	switch {
	case f.RelistInterrupted && f.Fill:
		s.logger.Info("A relist into the empty store was interrupted; the objects it had written were deleted", "objects", f.Filled)
	case f.RelistInterrupted:
		s.logger.Info("A relist was interrupted; its staged data was deleted and the previous content kept",
			"resourceVersion", f.Meta.RV, "complete", f.Meta.State == layout.StateComplete)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Store(&status{relistInterrupted: f.RelistInterrupted, discarded: f.Discarded})
	s.setMetaLocked(f.Meta)
	if f.Rebuild != "" {
		s.logger.Info("Rebuilding the index entries from the stored objects", "reason", f.Rebuild)
		if err := s.rebuildIndexesLocked(ctx, indexVersion); err != nil {
			return s.errorf("rebuild indexes", err)
		}
	}
	return nil
}

// rebuildIndexesLocked recomputes every index entry and reverse entry of
// the live generation from the items. The first transaction empties the
// index buckets and records the new index names with IndexBuild set; the
// items are then indexed rebuildChunk at a time; the last transaction
// clears IndexBuild. A crash in between leaves IndexBuild set, and the next
// open starts over. An item that cannot be decoded is deleted and the
// resource marked incomplete. s.mu must be held.
func (s *Store) rebuildIndexesLocked(ctx context.Context, indexVersion string) error {
	ix := s.indexers.Load()
	names := ix.names()
	err := s.writeLiveLocked("rebuild indexes", func(g *layout.Generation, m *layout.Meta) error {
		if err := g.B.DeleteBucket(layout.IndexBucket); err != nil && !errors.Is(err, bberrors.ErrBucketNotFound) {
			return err
		}
		var err error
		if g.Index, err = g.B.CreateBucket(layout.IndexBucket); err != nil {
			return err
		}
		for _, name := range names {
			if _, err := g.Index.CreateBucket(layout.IndexBucketName(name)); err != nil {
				return err
			}
		}
		m.Indexes, m.IndexVersion, m.IndexBuild = names, indexVersion, true
		return nil
	})
	if err != nil {
		return err
	}
	var after []byte
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return err
		}
		var bad []keyError
		err := s.writeLiveLocked("rebuild indexes", func(g *layout.Generation, m *layout.Meta) error {
			var err error
			w := layout.Writer{G: g, Names: names, Refile: true}
			after, done, bad, err = s.reindex(&w, ix, after, rebuildChunk)
			if err != nil {
				return err
			}
			for _, b := range bad {
				if err := g.DeleteItem([]byte(b.key)); err != nil {
					return err
				}
				m.Objects--
			}
			if len(bad) > 0 && m.State == layout.StateComplete {
				m.State = layout.StateIncomplete
				m.Reason = fmt.Sprintf("rebuild indexes: %d objects could not be decoded and were deleted", len(bad))
			}
			if done {
				m.IndexBuild = false
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, b := range bad {
			s.logger.Error(b.err, "Deleted an object that cannot be decoded while rebuilding indexes; the resource is marked incomplete", "key", b.key)
		}
	}
	return nil
}

// rebuildChunk is the number of items indexed per transaction by an index
// rebuild.
const rebuildChunk = 1000

// reindex files up to n items of w's generation that follow the key after
// (from the first if nil) under the indexes of ix, which must be w's names,
// leaving the envelopes untouched. It returns the last key handled, whether
// the end was reached, and the items that could not be decoded (not
// indexed). The items are read first and written after, since a write
// would invalidate the cursor.
func (s *Store) reindex(w *layout.Writer, ix *indexSet, after []byte, n int) ([]byte, bool, []keyError, error) {
	var bad []keyError
	var todo []prepared
	c := w.G.Items.Cursor()
	k, v := layout.SeekAfter(c, after)
	for i := 0; k != nil && i < n; k, v = c.Next() {
		i++
		key := string(k)
		after = append(after[:0:0], k...)
		obj, err := s.readEntry(w.G, k, v)
		if err != nil {
			bad = append(bad, keyError{key, err})
			continue
		}
		p := prepared{obj: obj, Write: layout.Write{Key: key, Sel: layout.AppendSelectPart(nil, key, obj)}}
		if err := p.computeValues(ix); err != nil {
			return nil, false, nil, err
		}
		p.obj = nil
		todo = append(todo, p)
	}
	end := k == nil
	for i := range todo {
		if _, err := w.Put(todo[i].Key, nil, todo[i].Sel, todo[i].Values); err != nil {
			return nil, false, nil, err
		}
	}
	return after, end, bad, nil
}

// AddIndexers adds indexes and files every stored object under them, in
// one write transaction, and records their names. On error nothing is
// added: store.ErrIndexConflict, ErrInvalidOptions, ErrIndexFunc,
// ErrCorrupt, or store.ErrReplaceInProgress while a relist is open.
func (s *Store) AddIndexers(newIndexers cache.Indexers) error {
	const op = "add indexers"
	if err := s.checkWritable(op); err != nil {
		return err
	}
	var added []indexer
	for name, fn := range newIndexers {
		if fn == nil {
			return s.errorf(op, fmt.Errorf("%w: index %q has a nil IndexFunc", ErrInvalidOptions, name))
		}
		added = append(added, indexer{name: name, fn: fn})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return s.errClosed(op)
	}
	if s.replace != nil || s.fill != nil {
		return s.errorf(op, store.ErrReplaceInProgress)
	}
	cur := s.indexers.Load()
	var conflicts []string
	for _, x := range added {
		if _, ok := cur.pos[x.name]; ok {
			conflicts = append(conflicts, x.name)
		}
	}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		return s.errorf(op, fmt.Errorf("%s: %w", strings.Join(conflicts, ", "), store.ErrIndexConflict))
	}
	if len(added) == 0 {
		return nil
	}
	next := newIndexSet(slices.Concat(cur.list, added))
	names := next.names()
	err := s.writeLiveLocked(op, func(g *layout.Generation, m *layout.Meta) error {
		for _, x := range added {
			if _, err := g.Index.CreateBucket(layout.IndexBucketName(x.name)); err != nil {
				return err
			}
		}
		// One transaction, read and written a chunk at a time so that
		// memory stays bounded.
		w := layout.Writer{G: g, Names: names}
		var after []byte
		for done := false; !done; {
			var bad []keyError
			var err error
			if after, done, bad, err = s.reindex(&w, next, after, rebuildChunk); err != nil {
				return err
			}
			if len(bad) > 0 {
				return bad[0].err
			}
		}
		m.Indexes = names
		return nil
	})
	if err != nil {
		return err
	}
	s.indexers.Store(next)
	return nil
}
