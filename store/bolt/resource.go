package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Resource opens the store of one resource in db, creating it if the file
// does not hold it.
//
// Opening checks what the file recorded for the identity (invariant 3): a
// different schema version, identity, codec name or fingerprint of the
// decoded Go type (ResourceOptions.Prototype), or unreadable metadata,
// discards the resource's data (State().Discarded says why, and a
// log line too). A Replace that was begun and not committed by an earlier
// process is deleted and reported (State().RelistInterrupted), the previous
// content and resourceVersion intact. Different index names or IndexVersion
// rebuild the index entries from the items, in bounded transactions.
//
// At most one Store per identity may be open on a DB (ErrResourceInUse).
// On a read-only DB nothing is written: data that would have to be
// discarded or rebuilt makes Resource fail with ErrReadOnly.
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
		typeHash:  typeFingerprint(opts.Prototype, opts.Identity),
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
		s.fileCorrupted(*p) // found before s was registered, or while it opened (told once): see filecheck.go
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

// openFindings is what open learned about the recorded data.
type openFindings struct {
	meta              layout.Meta
	discarded         string
	relistInterrupted bool
	// fill: the interrupted relist was a fill (Store.BeginFill), whose
	// filled objects were deleted.
	fill     bool
	filled   int64
	rebuild  string // why the indexes need a rebuild, "" if not
	resealed int64  // objects sealed with an older key, to be rewritten by a relist
}

// open checks and repairs the resource's recorded data and loads its meta.
func (s *Store) open(ctx context.Context, indexVersion string) error {
	want := s.indexers.Load().names()
	var f openFindings
	var err error
	if s.readOnly {
		err = s.db.view("open resource", func(tx *bbolt.Tx) error {
			f, err = s.inspectReadOnly(tx, want, indexVersion)
			return err
		})
	} else {
		err = s.db.update("open resource", func(tx *bbolt.Tx) error {
			f, err = s.repair(tx, want, indexVersion)
			return err
		})
	}
	if err != nil {
		return s.errorf("open", err)
	}
	if f.discarded != "" {
		s.logger.Info("Discarded the cached data of the resource; it will be relisted", "reason", f.discarded)
	}
	if f.resealed > 0 {
		s.logger.Info("Some cached objects are sealed with an older key; the resource will be relisted to rewrite them with the current key", "objects", f.resealed)
	}
	switch {
	case f.relistInterrupted && f.fill:
		s.logger.Info("A relist into the empty store was interrupted; the objects it had written were deleted", "objects", f.filled)
	case f.relistInterrupted:
		s.logger.Info("A relist was interrupted; its staged data was deleted and the previous content kept",
			"resourceVersion", f.meta.RV, "complete", f.meta.State == layout.StateComplete)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Store(&status{relistInterrupted: f.relistInterrupted, discarded: f.discarded})
	s.setMetaLocked(f.meta)
	if f.rebuild != "" {
		s.logger.Info("Rebuilding the index entries from the stored objects", "reason", f.rebuild)
		if err := s.rebuildIndexesLocked(ctx, indexVersion); err != nil {
			return s.errorf("rebuild indexes", err)
		}
	}
	return nil
}

// mismatch returns why recorded meta cannot be used for this store, or "".
func (s *Store) mismatch(m *layout.Meta) string {
	switch {
	case m.Schema != layout.SchemaVersion:
		return fmt.Sprintf("schema version %d recorded, this binary uses %d", m.Schema, layout.SchemaVersion)
	case Identity(m.Identity) != s.id:
		return fmt.Sprintf("identity %s recorded, want %s", m.Identity, s.id)
	case m.Codec != s.codec.Name():
		return fmt.Sprintf("codec %q recorded, want %q", m.Codec, s.codec.Name())
	case m.TypeHash != s.typeHash:
		return fmt.Sprintf("type fingerprint %q recorded, this binary's type has %q (its API types changed: stored objects may lack fields)", m.TypeHash, s.typeHash)
	case m.Cluster != s.cluster:
		return fmt.Sprintf("cluster %q recorded, now connected to cluster %q (the cluster was recreated or the file comes from another one)", m.Cluster, s.cluster)
	case m.TransformVersion != s.transform:
		return fmt.Sprintf("transform version %q recorded, want %q (the transform changed: stored objects were shaped by the old one)", m.TransformVersion, s.transform)
	}
	return ""
}

// indexMismatch returns why the recorded index entries cannot be used, or "".
func indexMismatch(m *layout.Meta, names []string, version string) string {
	switch {
	case m.IndexBuild:
		return "an index rebuild was interrupted"
	case !slices.Equal(m.Indexes, names):
		return fmt.Sprintf("index names %q recorded, want %q", m.Indexes, names)
	case m.IndexVersion != version:
		return fmt.Sprintf("index version %q recorded, want %q", m.IndexVersion, version)
	}
	return ""
}

// checkLive returns an error if the live generation of res is missing a
// bucket or its envelope sequence is behind.
func checkLive(res *bbolt.Bucket) error {
	g, err := layout.OpenLive(res)
	if err != nil {
		return err
	}
	return g.CheckSequence()
}

// repair brings the resource's bucket into a usable state in one write
// transaction: creates it, discards mismatching data, deletes staged and
// replaced generations.
func (s *Store) repair(tx *bbolt.Tx, want []string, indexVersion string) (openFindings, error) {
	var f openFindings
	res := tx.Bucket(s.bname)
	if res != nil {
		var reason string
		m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
		if err != nil {
			reason = fmt.Sprintf("metadata unreadable: %v", err)
		} else if reason = s.mismatch(&m); reason == "" {
			if err = checkLive(res); err != nil {
				reason = fmt.Sprintf("live data unreadable: %v", err)
			}
		}
		if part := layout.PartOf(err); part != "" {
			s.countCorrupt(part)
		}
		var sealed sealFindings
		if reason == "" {
			if sealed, err = s.checkSealKeys(res); err != nil {
				return f, err
			}
			reason = sealed.unreadable
		}
		if reason == "" && sealed.stale > 0 && m.State == layout.StateComplete {
			// Rotation: a relist rewrites every object with the current key.
			m.State, m.Reason = layout.StateIncomplete, fmt.Sprintf("%d objects sealed with an older key; a relist rewrites them with the current one", sealed.stale)
			f.resealed = sealed.stale
			if err := layout.PutMeta(res, &m); err != nil {
				return f, err
			}
		}
		if reason != "" {
			if err := tx.DeleteBucket(s.bname); err != nil {
				return f, err
			}
			res, f.discarded = nil, reason
		} else {
			f.meta = m
		}
	}
	if res == nil {
		return s.create(tx, f.discarded, want, indexVersion)
	}
	m := &f.meta
	if m.Staging != 0 {
		f.relistInterrupted = true
		m.Staging = 0
	}
	live, _ := layout.LiveGen(res)
	if m.NextGen <= live {
		m.NextGen = live + 1
	}
	if m.State == layout.StateFilling {
		// A fill that did not commit wrote part of a list in place:
		// never serve it nor resume from it (invariant 2). An empty
		// generation replaces it; the loop below deletes the old one.
		f.relistInterrupted, f.fill, f.filled = true, true, m.Objects
		live = m.NextGen
		m.NextGen++
		if _, err := layout.CreateGeneration(res, live, m.Indexes); err != nil {
			return f, err
		}
		if err := res.Put(layout.LiveKey, layout.LiveValue(live)); err != nil {
			return f, err
		}
		m.RV, m.State, m.Reason, m.Objects = "", layout.StateNew, "", 0
	}
	// Delete every generation but the live one: a staged one (interrupted
	// relist) or a replaced one whose deletion did not happen.
	gens := res.Bucket(layout.GenBucket)
	var stale [][]byte
	if err := gens.ForEachBucket(func(k []byte) error {
		if len(k) != 8 || binary.BigEndian.Uint64(k) != live {
			stale = append(stale, slices.Clone(k))
		}
		return nil
	}); err != nil {
		return f, err
	}
	for _, k := range stale {
		if err := gens.DeleteBucket(k); err != nil {
			return f, err
		}
	}
	f.rebuild = indexMismatch(m, want, indexVersion)
	if f.relistInterrupted || len(stale) > 0 {
		return f, layout.PutMeta(res, m)
	}
	return f, nil
}

// create writes a new, empty resource.
func (s *Store) create(tx *bbolt.Tx, discarded string, want []string, indexVersion string) (openFindings, error) {
	res, err := tx.CreateBucket(s.bname)
	if err != nil {
		return openFindings{}, err
	}
	now := time.Now().UnixNano()
	m := layout.Meta{
		Schema: layout.SchemaVersion, Identity: layout.Identity(s.id), Codec: s.codec.Name(), TypeHash: s.typeHash,
		Cluster: s.cluster, TransformVersion: s.transform,
		Indexes: want, IndexVersion: indexVersion, State: layout.StateNew,
		NextGen: 2, Created: now,
	}
	if _, err := layout.CreateGeneration(res, 1, want); err != nil {
		return openFindings{}, err
	}
	if err := res.Put(layout.LiveKey, layout.LiveValue(1)); err != nil {
		return openFindings{}, err
	}
	return openFindings{meta: m, discarded: discarded}, layout.PutMeta(res, &m)
}

// inspectReadOnly is repair for a read-only DB: it writes nothing and fails
// where repair would discard or rebuild.
func (s *Store) inspectReadOnly(tx *bbolt.Tx, want []string, indexVersion string) (openFindings, error) {
	var f openFindings
	res := tx.Bucket(s.bname)
	if res == nil {
		return f, fmt.Errorf("%w: %w (a read-only DB cannot create it)", ErrResourceNotFound, ErrReadOnly)
	}
	m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
	if err != nil {
		return f, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	reason := s.mismatch(&m)
	if reason == "" {
		reason = indexMismatch(&m, want, indexVersion)
	}
	if reason == "" {
		if err := checkLive(res); err != nil {
			reason = err.Error()
		}
	}
	if reason != "" {
		return f, fmt.Errorf("%w: recorded data cannot be used (%s) and would have to be discarded or rebuilt", ErrReadOnly, reason)
	}
	f.meta = m
	f.relistInterrupted = m.Staging != 0 || m.State == layout.StateFilling
	return f, nil
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
			w := writer{g: g, names: names, refile: true}
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
func (s *Store) reindex(w *writer, ix *indexSet, after []byte, n int) ([]byte, bool, []keyError, error) {
	var bad []keyError
	var todo []prepared
	c := w.g.Items.Cursor()
	k, v := seekAfter(c, after)
	for i := 0; k != nil && i < n; k, v = c.Next() {
		i++
		key := string(k)
		after = append(after[:0:0], k...)
		obj, err := s.readEntry(w.g, k, v)
		if err != nil {
			bad = append(bad, keyError{key, err})
			continue
		}
		p := prepared{key: key, obj: obj, sel: layout.AppendSelectPart(nil, key, obj)}
		if err := p.computeValues(ix); err != nil {
			return nil, false, nil, err
		}
		p.obj = nil
		todo = append(todo, p)
	}
	end := k == nil
	for i := range todo {
		if _, err := w.put(todo[i].key, nil, todo[i].sel, todo[i].values); err != nil {
			return nil, false, nil, err
		}
	}
	return after, end, bad, nil
}

// AddIndexers adds indexes and files every stored object under them, in one
// write transaction (it decodes every object). A name that exists returns
// an error wrapping store.ErrIndexConflict, a nil function
// ErrInvalidOptions, an index function error ErrIndexFunc, an object that
// cannot be decoded ErrCorrupt; on error nothing is added. While a Replace
// (or a fill) is open it returns store.ErrReplaceInProgress. The new names are
// recorded: a later Resource with another index set rebuilds the entries.
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
		w := writer{g: g, names: names}
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
