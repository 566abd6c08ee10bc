package layout

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/warmcache/warmcache/store"
)

// An item entry (the value of items/<key>) is the 8-byte big-endian id of
// the item's envelope in blobs/, followed by the item's select part (its
// namespace and labels, see AppendSelectPart), by its reverse entry: the
// index values it is filed under, empty for an item without any, and by
// its checksum (4 bytes, see checksum.go), which covers the object key and
// the rest of the entry. Reading an object takes two lookups; in exchange
// a write in watch order rewrites leaves of small entries only, an update
// whose labels and index values did not change leaves its item entry
// alone, and a selection by namespace, labels or index reads item entries
// only and decodes what it selects.

// BlobIDLen is the length of a blob id.
const BlobIDLen = 8

// ItemEntry is a parsed item entry. Its fields alias the entry.
type ItemEntry struct {
	// ID is the blob id of the item's envelope.
	ID []byte
	// Select is the raw select part, Reverse the raw reverse entry.
	Select, Reverse []byte
	// Parsed is the select part, parsed.
	Parsed SelectPart
}

// AppendItemEntry appends the item entry of object key key with blob id
// id, the encoded select part sel and the reverse entry of values (see
// AppendReverse), checksum included.
func AppendItemEntry(dst, key, id, sel []byte, names []string, values [][]string) []byte {
	start := len(dst)
	dst = append(dst, id...)
	dst = append(dst, sel...)
	dst = AppendReverse(dst, names, values)
	return appendSum(dst, start, key)
}

// SealItemEntry appends the checksum of the item entry body of object key
// key to body: for tools and tests that assemble an entry from raw parts.
func SealItemEntry(key, body []byte) []byte {
	return appendSum(body, 0, key)
}

// VerifyItemEntry checks the checksum of item entry v of object key key
// and returns the entry without it (aliasing v). The error matches
// ErrChecksum.
func VerifyItemEntry(key, v []byte) ([]byte, error) {
	return checkSum(PartItem, key, v)
}

// ParseItemEntry verifies item entry v of object key key and splits it
// into its parts, checking the select part (not the reverse entry, which
// DecodeReverse checks).
func ParseItemEntry(key, v []byte) (ItemEntry, error) {
	body, err := VerifyItemEntry(key, v)
	if err != nil {
		return ItemEntry{}, err
	}
	return ParseItemBody(body)
}

// ParseItemBody splits the body of an item entry, as VerifyItemEntry
// returned it, into its parts like ParseItemEntry, without verifying the
// checksum again.
func ParseItemBody(body []byte) (ItemEntry, error) {
	if _, err := bodyBlobID(body); err != nil {
		return ItemEntry{}, err
	}
	p, rev, err := ParseSelectPart(body[BlobIDLen:])
	if err != nil {
		return ItemEntry{}, fmt.Errorf("item entry: %w", err)
	}
	return ItemEntry{ID: body[:BlobIDLen], Select: body[BlobIDLen : len(body)-len(rev)], Reverse: rev, Parsed: p}, nil
}

// SplitItemEntry verifies item entry v of key and returns its blob id and
// its reverse entry. Both alias v.
func SplitItemEntry(key, v []byte) (id, rev []byte, err error) {
	e, err := ParseItemEntry(key, v)
	if err != nil {
		return nil, nil, err
	}
	return e.ID, e.Reverse, nil
}

// ItemBlobID verifies item entry v of key and returns its blob id,
// aliasing v, without parsing the rest.
func ItemBlobID(key, v []byte) ([]byte, error) {
	body, err := VerifyItemEntry(key, v)
	if err != nil {
		return nil, err
	}
	return bodyBlobID(body)
}

// bodyBlobID returns the blob id of item entry body body, aliasing it.
func bodyBlobID(body []byte) ([]byte, error) {
	if len(body) < BlobIDLen {
		return nil, fmt.Errorf("item entry of %d bytes, shorter than a blob id", len(body))
	}
	return body[:BlobIDLen], nil
}

// ItemReverse verifies item entry v of key and decodes its reverse entry.
func ItemReverse(key, v []byte) (map[string][]string, error) {
	_, rev, err := SplitItemEntry(key, v)
	if err != nil {
		return nil, err
	}
	return DecodeReverse(rev)
}

// NextBlobID returns a new blob id of g, in increasing order: the envelopes
// of a relist (added in key order) are appended, and so are those of adds.
func (g *Generation) NextBlobID() ([]byte, error) {
	seq, err := g.Blobs.NextSequence()
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, BlobIDLen), seq), nil
}

// CheckSequence returns an error if the blobs bucket's sequence is below
// an envelope id in use: the next add would overwrite another item's
// envelope. Open, Verify and the first add of each write transaction
// check it.
//
// It seeks the first id above the sequence rather than the last id:
// bbolt's Cursor.Last (v1.4.3) loops without end in a write transaction
// whose deletes have emptied every leaf under a branch (its skip over
// empty leaves goes back and forth between them), and a batch may delete
// every envelope before it adds one. Seek only moves forward over empty
// leaves.
func (g *Generation) CheckSequence() error {
	seq := g.Blobs.Sequence()
	if seq == math.MaxUint64 {
		return nil // no id is above it
	}
	k, _ := g.Blobs.Cursor().Seek(binary.BigEndian.AppendUint64(make([]byte, 0, BlobIDLen), seq+1))
	if k == nil {
		return nil
	}
	if len(k) != BlobIDLen {
		return fmt.Errorf("malformed envelope id %x", k)
	}
	return fmt.Errorf("envelope sequence %d is below envelope id %d, in use", seq, binary.BigEndian.Uint64(k))
}

// EnvelopeOf returns the envelope of item key with entry v, aliasing the
// transaction's memory, after verifying the checksums of both. A malformed
// entry, a missing envelope or a checksum mismatch (ErrChecksum) is an
// error wrapping store.ErrCorrupt.
func (g *Generation) EnvelopeOf(key, v []byte) ([]byte, error) {
	id, err := ItemBlobID(key, v)
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: %w", store.ErrCorrupt, key, err)
	}
	return g.EnvelopeAt(key, id)
}

// EnvelopeAt returns the envelope of item key stored under blob id id,
// taken from an item entry already verified (ParseItemEntry,
// VerifyItemEntry): EnvelopeOf without verifying the entry again.
func (g *Generation) EnvelopeAt(key, id []byte) ([]byte, error) {
	env := g.Blobs.Get(id)
	if env == nil {
		return nil, fmt.Errorf("%w: item %q: envelope %d missing", store.ErrCorrupt, key, binary.BigEndian.Uint64(id))
	}
	if err := VerifyEnvelope(key, env); err != nil {
		return nil, fmt.Errorf("%w: item %q: %w", store.ErrCorrupt, key, err)
	}
	return env, nil
}

// Lookup returns the envelope stored under key, nil if there is no such
// item.
func (g *Generation) Lookup(key []byte) ([]byte, error) {
	v := g.Items.Get(key)
	if v == nil {
		return nil, nil
	}
	return g.EnvelopeOf(key, v)
}

// DeleteItem deletes item key and its envelope (not its index entries).
// A malformed entry, or one whose checksum does not match (its blob id may
// name another item's envelope), is deleted all the same: its envelope, if
// any, is left behind unreferenced, which inspect.Verify reports.
func (g *Generation) DeleteItem(key []byte) error {
	v := g.Items.Get(key)
	if v == nil {
		return nil
	}
	if id, err := ItemBlobID(key, v); err == nil {
		if err := g.Blobs.Delete(append([]byte(nil), id...)); err != nil {
			return err
		}
	}
	return g.Items.Delete(key)
}
