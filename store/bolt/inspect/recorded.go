package inspect

import (
	"context"
	"fmt"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
	"github.com/warmcache/warmcache/store/codec"
)

// ErrNoIndexFunc is returned by Index on a Store opened with OpenRecorded:
// the file records index names and entries, not the functions that
// computed them.
var ErrNoIndexFunc = fileerr.ErrNoIndexFunc

// CodecResolver returns the codec recorded under name, or an error if it
// does not know it.
type CodecResolver func(name string) (codec.Codec, error)

// OpenRecorded opens the recorded resource id of db for reading, without
// knowing its Go types or index functions: c decodes the payloads (its name
// must be the recorded codec name, see ResourceInfo.Codec); the indexes are
// the recorded ones, so ByIndex, IndexKeys, ScanIndex and
// ListIndexFuncValues work while Index returns ErrNoIndexFunc. The
// store is read-only (writes return bolt.ErrReadOnly) and reads the content
// as recorded, including a staged Replace's absence. Close it, or db, when
// done.
//
// A missing identity returns bolt.ErrResourceNotFound; a nil codec or one
// whose name differs from the recorded one bolt.ErrInvalidOptions; a
// store of the identity already open on db bolt.ErrResourceInUse.
func OpenRecorded(ctx context.Context, db *bolt.DB, id bolt.Identity, c codec.Codec) (*bolt.Store, error) {
	s, err := file(db).OpenRecorded(ctx, id, c)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	return s, nil
}
