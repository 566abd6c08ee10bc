package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Identities returns the identities of the resources the file records, in
// the order of their bucket names, from one read transaction that reads
// one record per resource, not their data. A resource whose metadata cannot
// be read is left out (inspect lists it with its problem). Errors:
// ErrClosed, a failed read (ErrCorrupt), ctx's.
func (db *DB) Identities(ctx context.Context) ([]Identity, error) {
	const op = "identities"
	if db.isClosed() {
		return nil, fmt.Errorf("bolt: %s of %s: %w", op, db.path, ErrClosed)
	}
	var out []Identity
	err := db.view(op, func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, res *bbolt.Bucket) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !layout.IsResourceBucket(name) {
				return nil
			}
			m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
			if err != nil {
				return nil
			}
			out = append(out, identityOf(&m))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: %s of %s: %w", op, db.path, err)
	}
	return out, nil
}
