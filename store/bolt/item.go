package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// An item entry (the value of items/<key>) is the 8-byte big-endian id of
// the item's envelope in blobs/, followed by the item's reverse entry: the
// index values it is filed under, empty for an item without any. Reading
// an object takes two lookups; in exchange a write in watch order rewrites
// leaves of small entries only, and an update whose index values did not
// change leaves its item entry alone.

// blobIDLen is the length of a blob id.
const blobIDLen = 8

// splitItemEntry returns the blob id and the reverse entry of an item entry.
// Both alias v.
func splitItemEntry(v []byte) (id, rev []byte, err error) {
	if len(v) < blobIDLen {
		return nil, nil, fmt.Errorf("item entry of %d bytes, shorter than a blob id", len(v))
	}
	return v[:blobIDLen], v[blobIDLen:], nil
}

// itemReverse decodes the reverse entry of an item entry.
func itemReverse(v []byte) (map[string][]string, error) {
	_, rev, err := splitItemEntry(v)
	if err != nil {
		return nil, err
	}
	return decodeReverse(rev)
}

// nextBlobID returns a new blob id of g, in increasing order: the envelopes
// of a relist (added in key order) are appended, and so are those of adds.
func (g *generation) nextBlobID() ([]byte, error) {
	seq, err := g.blobs.NextSequence()
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, blobIDLen), seq), nil
}

// checkSequence returns an error if the blobs bucket's sequence is below
// the largest envelope id in use: the next add would overwrite another
// item's envelope. Open, Verify and the first add of each write
// transaction check it.
func (g *generation) checkSequence() error {
	k, _ := g.blobs.Cursor().Last()
	if k == nil {
		return nil
	}
	if len(k) != blobIDLen {
		return fmt.Errorf("malformed envelope id %x", k)
	}
	if last, seq := binary.BigEndian.Uint64(k), g.blobs.Sequence(); seq < last {
		return fmt.Errorf("envelope sequence %d is below the largest envelope id %d", seq, last)
	}
	return nil
}

// envelopeOf returns the envelope of item key with entry v, aliasing the
// transaction's memory. A malformed entry or a missing envelope is an
// error wrapping ErrCorrupt.
func (g *generation) envelopeOf(key, v []byte) ([]byte, error) {
	id, _, err := splitItemEntry(v)
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: %w", ErrCorrupt, key, err)
	}
	env := g.blobs.Get(id)
	if env == nil {
		return nil, fmt.Errorf("%w: item %q: envelope %d missing", ErrCorrupt, key, binary.BigEndian.Uint64(id))
	}
	return env, nil
}

// envelope returns the envelope stored under key, nil if there is no such
// item.
func (g *generation) envelope(key []byte) ([]byte, error) {
	v := g.items.Get(key)
	if v == nil {
		return nil, nil
	}
	return g.envelopeOf(key, v)
}

// deleteItem deletes item key and its envelope (not its index entries).
// A malformed entry is deleted all the same: its envelope, if any, is
// left behind unreferenced, which Verify reports.
func (g *generation) deleteItem(key []byte) error {
	v := g.items.Get(key)
	if v == nil {
		return nil
	}
	if id, _, err := splitItemEntry(v); err == nil {
		if err := g.blobs.Delete(append([]byte(nil), id...)); err != nil {
			return err
		}
	}
	return g.items.Delete(key)
}

// errNoItem is returned by writer.put when asked to re-file a key that has
// no item.
var errNoItem = errors.New("no such item")
