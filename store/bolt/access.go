package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/access"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/verify"
	"github.com/warmcache/warmcache/store/codec"
)

// Access is for package store/bolt/inspect: its argument and result are
// of types internal to store/bolt, so no other package can call it.
func (db *DB) Access(access.Token) access.DB[*Store, Identity] { return dbAccess{db} }

// dbAccess is DB.Access's result.
type dbAccess struct{ db *DB }

func (a dbAccess) View(op string, fn func(*bbolt.Tx) error) error { return a.db.view(op, fn) }

func (a dbAccess) Bolt() (*bbolt.DB, error) {
	if a.db.isClosed() {
		return nil, ErrClosed
	}
	return a.db.bolt, nil
}

func (a dbAccess) Known() map[string]verify.Known { return a.db.known() }

func (a dbAccess) OpenRecorded(ctx context.Context, id Identity, c codec.Codec) (*Store, error) {
	return a.db.openRecorded(ctx, id, c)
}

// known returns the codecs and index functions of the stores open on db,
// by bucket name.
func (db *DB) known() map[string]verify.Known {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := make(map[string]verify.Known, len(db.stores))
	for name, s := range db.stores {
		ix := s.indexers.Load()
		fns := make(cache.Indexers, len(ix.list))
		for _, x := range ix.list {
			fns[x.name] = x.fn
		}
		out[name] = verify.Known{Codec: s.codec, Indexers: fns}
	}
	return out
}

// openRecorded opens the recorded resource id for reading with codec c,
// without knowing its Go types or index functions (inspect.OpenRecorded):
// the indexes are the recorded ones, whose functions are nil, so Index
// returns inspect.ErrNoIndexFunc. The store is read-only (writes return
// ErrReadOnly) and reads the content as recorded.
func (db *DB) openRecorded(ctx context.Context, id Identity, c codec.Codec) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: open recorded: %w", err)
	}
	id, err := id.canonical()
	if err != nil {
		return nil, fmt.Errorf("bolt: open recorded: %w", err)
	}
	name := id.String()
	if c == nil {
		return nil, fmt.Errorf("bolt: open recorded %s: %w: no codec", name, ErrInvalidOptions)
	}
	var m layout.Meta
	err = db.view("open recorded", func(tx *bbolt.Tx) error {
		res := tx.Bucket([]byte(name))
		if res == nil {
			return ErrResourceNotFound
		}
		var err error
		if m, err = layout.DecodeMeta(res.Get(layout.MetaKey)); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if _, err := layout.OpenLive(res); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil
	})
	if err == nil && identityOf(&m) != id {
		err = fmt.Errorf("%w: bucket records identity %s", ErrCorrupt, identityOf(&m))
	}
	if err != nil {
		return nil, fmt.Errorf("bolt: open recorded %s: %w", name, err)
	}
	if c.Name() != m.Codec {
		return nil, fmt.Errorf("bolt: open recorded %s: %w: codec %q given, %q recorded", name, ErrInvalidOptions, c.Name(), m.Codec)
	}
	list := make([]indexer, len(m.Indexes))
	for i, n := range m.Indexes {
		list[i] = indexer{name: n}
	}
	s := &Store{db: db, id: id, name: name, bname: []byte(name), codec: c, readOnly: true}
	if db.hot != nil {
		s.hot = db.hot.Part(c.Name(), db.metrics.Hot(name), &db.hotEpoch)
	}
	s.keyFunc = store.DefaultKeyFunc
	s.logger = db.logger.WithValues("resource", name)
	s.indexers.Store(newIndexSet(list))
	s.meta = m
	s.status.Store(&status{meta: m.Clone(), relistInterrupted: m.Staging != 0 || m.State == layout.StateFilling})
	if err := db.register(s); err != nil {
		return nil, err
	}
	return s, nil
}
