package inspect

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/seal"
)

// UnreadableKeyID counts, in SealKeys, the payloads whose sealed header
// cannot be read (or whose envelope is malformed).
const UnreadableKeyID = "unreadable"

// SealKeys returns the number of live objects of the recorded resource id
// per ID of the key that sealed them, read from the payloads' headers
// without any key. A resource that is not sealed returns nil. It reads
// every item of the resource in one read transaction.
func SealKeys(ctx context.Context, db *bolt.DB, id bolt.Identity) (map[string]int64, error) {
	var out map[string]int64
	err := file(db).View("seal keys", func(tx *bbolt.Tx) error {
		res := tx.Bucket([]byte(id.String()))
		if res == nil {
			return fmt.Errorf("%w: %s", bolt.ErrResourceNotFound, id)
		}
		m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
		if err != nil {
			return fmt.Errorf("%w: %w", bolt.ErrCorrupt, err)
		}
		if _, ok := seal.InnerName(m.Codec); !ok {
			return nil
		}
		g, err := layout.OpenLive(res)
		if err != nil {
			return fmt.Errorf("%w: %w", bolt.ErrCorrupt, err)
		}
		out = map[string]int64{}
		c := g.Items.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			kid := UnreadableKeyID
			if envb, err := g.EnvelopeOf(k, v); err == nil {
				if payload, err := layout.EnvelopePayload(envb); err == nil {
					if id, err := seal.KeyIDOf(payload); err == nil {
						kid = id
					}
				}
			}
			out[kid]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect: seal keys of %s in %s: %w", id, db.Path(), err)
	}
	return out, nil
}
