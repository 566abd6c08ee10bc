package layout

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store"
)

// Index is an index bucket of a generation, open in a transaction, and
// the checksums of its entries.
type Index struct {
	Name string
	B    *bbolt.Bucket
	Sums IndexSum
}

// OpenIndex returns the index name of g; a missing bucket is an error
// wrapping store.ErrCorrupt.
func (g *Generation) OpenIndex(name string) (Index, error) {
	b := g.Index.Bucket(IndexBucketName(name))
	if b == nil {
		return Index{}, fmt.Errorf("%w: index bucket %q missing", store.ErrCorrupt, name)
	}
	return Index{Name: name, B: b, Sums: NewIndexSum(name)}, nil
}

// IndexEntryError is the error, wrapping store.ErrCorrupt and err, of the
// entry of index name filing key under value (both as stored) whose
// checksum does not match.
func IndexEntryError(name, value, key string, err error) error {
	return fmt.Errorf("%w: index %q: entry for %q under %q: %w", store.ErrCorrupt, name, key, value, err)
}
