package bolt

import (
	"context"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// DropOptions configures DropResource.
type DropOptions struct {
	// Keep, when set, is called with the codec name the file records for
	// the resource (for example a sealed codec's, see package store/seal);
	// if it returns true the resource is kept and DropResource writes
	// nothing. A resource whose metadata cannot be read is dropped
	// without calling Keep. Default nil: the resource is dropped whatever
	// its codec.
	Keep func(codec string) bool
}

// errKeep rolls back DropResource's transaction when the resource is kept.
var errKeep = errors.New("resource kept")

// DropResource deletes from the file everything it holds of the resource
// id (its meta, objects, index entries and any staged relist) in one write
// transaction, so that a crash leaves either all of it or none, and
// reports whether there was anything to delete. A resource the file does
// not hold is not an error: (false, nil). The other resources are
// untouched. The deleted pages are freed, not overwritten: bbolt reuses
// them for later writes, and a copy made with inspect.CompactTo holds none
// of them.
//
// A dropped resource is logged with the codec and the number of objects
// the file recorded; one whose meta fails its checksum is counted in
// warmcache_store_corrupt_objects_total (part "meta"), as when Resource
// discards it.
//
// Errors: ErrResourceInUse when a Store of id is open on db (Resource
// waits for DropResource, and the reverse); ErrReadOnly on a read-only DB
// or file holding the resource (one that does not hold it, or whose Keep
// keeps it, is (false, nil)); ErrClosed; ErrInvalidOptions for an invalid identity; the
// write errors of any transaction (ErrDiskFull, ErrCorrupt). On error
// nothing is deleted.
func (db *DB) DropResource(ctx context.Context, id Identity, opts DropOptions) (dropped bool, err error) {
	const op = "drop resource"
	id, err = id.canonical()
	if err != nil {
		return false, fmt.Errorf("bolt: %s: %w", op, err)
	}
	name := id.String()
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("bolt: %s %s: %w", op, name, err)
	}
	if db.opts.ReadOnly {
		// Nothing to delete is not an error, even read-only.
		var held bool
		err := db.view(op, func(tx *bbolt.Tx) error {
			res := tx.Bucket([]byte(name))
			if res == nil {
				return nil
			}
			m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
			held = err != nil || opts.Keep == nil || !opts.Keep(m.Codec)
			return nil
		})
		switch {
		case err != nil:
			return false, fmt.Errorf("bolt: %s %s: %w", op, name, err)
		case held:
			return false, fmt.Errorf("bolt: %s %s: %w (a read-only DB cannot delete it)", op, name, ErrReadOnly)
		}
		return false, nil
	}
	if err := db.reserve(name); err != nil {
		return false, fmt.Errorf("bolt: %s %s: %w", op, name, err)
	}
	defer db.release(name)
	var (
		m       layout.Meta
		metaErr error
	)
	err = db.update(op, func(tx *bbolt.Tx) error {
		res := tx.Bucket([]byte(name))
		if res == nil {
			return nil
		}
		m, metaErr = layout.DecodeMeta(res.Get(layout.MetaKey))
		if metaErr == nil && opts.Keep != nil && opts.Keep(m.Codec) {
			return errKeep
		}
		dropped = true
		return tx.DeleteBucket([]byte(name))
	})
	switch {
	case errors.Is(err, errKeep):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("bolt: %s %s: %w", op, name, err)
	case !dropped:
		return false, nil
	}
	logger := db.logger.WithValues("resource", name)
	if metaErr != nil {
		if part := layout.PartOf(metaErr); part != "" {
			db.metrics.CorruptRecord(name, part)
		}
		logger.Info("Dropped the resource's data from the cache file", "reason", fmt.Sprintf("metadata unreadable: %v", metaErr))
		return true, nil
	}
	logger.Info("Dropped the resource's data from the cache file", "codec", m.Codec, "objects", m.Objects)
	return true, nil
}

// reserve marks the resource of bucket name as being dropped: Resource
// refuses it until release, and reserve refuses a resource open on db.
func (db *DB) reserve(name string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	if _, ok := db.stores[name]; ok || db.dropping[name] {
		return ErrResourceInUse
	}
	if db.dropping == nil {
		db.dropping = map[string]bool{}
	}
	db.dropping[name] = true
	return nil
}

// release ends reserve.
func (db *DB) release(name string) {
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.dropping, name)
}
