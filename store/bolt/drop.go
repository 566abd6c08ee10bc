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
	// Keep, if set, is called with the codec name the file records for
	// the resource (a sealed codec's, say): true keeps it. A resource
	// whose metadata cannot be read is dropped without asking. Default:
	// nil.
	Keep func(codec string) bool
}

// errKeep rolls back DropResource's transaction when the resource is kept.
var errKeep = errors.New("resource kept")

// DropResource deletes everything the file holds of the resource id, in
// one transaction, and reports whether there was anything to delete (a
// resource the file does not hold is (false, nil)); opts.Keep may keep it.
// The other resources are untouched. Errors: ErrResourceInUse while a Store
// of id is open; ErrReadOnly on a read-only DB or file holding it;
// ErrClosed; ErrInvalidOptions; a failed write (ErrDiskFull, ErrCorrupt),
// which deletes nothing.
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
