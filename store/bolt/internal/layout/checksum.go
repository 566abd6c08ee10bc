package layout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/warmcache/warmcache/store"
)

// Checksums. bbolt checksums its meta pages only: a byte damaged inside a
// value or a key of a page (a bad sector, a stray write, a copy gone wrong)
// reads back as valid data. Every stored record that can change what a
// read returns therefore carries a CRC-32C (Castagnoli) of its bytes,
// verified on every read and by the content check:
//
//	envelope     the last 4 bytes (a msgpack uint32, the array's fourth
//	             element) cover the object key and every byte before them:
//	             rv, uid and payload, so a damaged payload, a damaged
//	             resourceVersion and an envelope read for another key (a
//	             damaged blob id) are all caught
//	item entry   the last 4 bytes (big-endian) cover the object key and the
//	             entry before them: blob id, select part (namespace and
//	             labels, which selections trust without decoding) and
//	             reverse entry (the index values an update removes)
//	index entry  the value (empty before schema 6) is 4 bytes covering the
//	             index name, the entry's key (value 0x00 object key) and
//	             what follows them: a value over 1 KiB, which the key
//	             holds a hash of (schema 7)
//	meta         a msgpack uint32 after the msgpack map covers the map
//	live         4 bytes after the 8-byte generation number cover it
//
// Binding the key into the checksums of envelopes and item entries means
// a damaged key, or an entry that points at another item's envelope,
// fails like damaged content. The format marker (warmcache/format) has no
// checksum: damage there makes the file foreign or of an unknown version,
// which opening reports.
//
// CRC-32C is hardware-accelerated (SSE 4.2, ARMv8 CRC) and in the standard
// library. Measured on a podgen pod's 4.7 KB envelope (BenchmarkChecksum,
// on a 2-core AMD EPYC): 185 ns, 1.1% of the 17.5 µs of its protobuf
// decode; xxhash64 takes 330 ns, maphash (which the hot tier used before)
// 355 ns and CRC-64 2,600 ns. Any error confined to 32 consecutive bits is
// detected, others with probability 1 - 2^-32.

// ErrChecksum is wrapped by the errors of stored bytes that do not match
// their checksum (see ChecksumError). It wraps store.ErrCorrupt.
var ErrChecksum = fmt.Errorf("%w: stored bytes do not match their checksum", store.ErrCorrupt)

// Parts of a resource's data, as ChecksumError and package bolt's metrics
// name them.
const (
	PartEnvelope = "envelope"
	PartItem     = "item"
	PartIndex    = "index"
	PartMeta     = "meta"
	PartLive     = "live"
)

// ChecksumError reports stored bytes whose checksum does not match. It
// matches ErrChecksum and store.ErrCorrupt.
type ChecksumError struct {
	// Part is the record concerned: PartEnvelope, PartItem, PartIndex,
	// PartMeta or PartLive.
	Part string
	// Stored is the checksum recorded, Computed the one of the bytes.
	Stored, Computed uint32
	// Missing, if not empty, says why there is no checksum to compare
	// (a record too short to hold one, or without its tag).
	Missing string
}

func (e *ChecksumError) Error() string {
	return e.Part + " " + e.Detail()
}

// Detail is the error without the part.
func (e *ChecksumError) Detail() string {
	if e.Missing != "" {
		return "without a checksum: " + e.Missing
	}
	return fmt.Sprintf("checksum mismatch: stored %08x, computed %08x", e.Stored, e.Computed)
}

// Is reports whether target is ErrChecksum or store.ErrCorrupt.
func (e *ChecksumError) Is(target error) bool {
	return target == ErrChecksum || target == store.ErrCorrupt
}

// Detail is the Detail of the ChecksumError in err's chain, err's text if
// there is none.
func Detail(err error) string {
	var ce *ChecksumError
	if errors.As(err, &ce) {
		return ce.Detail()
	}
	return err.Error()
}

// PartOf returns the Part of the ChecksumError in err's chain, "" if there
// is none.
func PartOf(err error) string {
	var ce *ChecksumError
	if errors.As(err, &ce) {
		return ce.Part
	}
	return ""
}

// SumLen is the length of a checksum.
const SumLen = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sum returns the checksum of key followed by data.
func sum(key, data []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, data)
}

// appendSum appends the big-endian checksum of key and b[from:] to b.
func appendSum(b []byte, from int, key []byte) []byte {
	return binary.BigEndian.AppendUint32(b, sum(key, b[from:]))
}

// checkSum verifies that the last SumLen bytes of v are the checksum of
// key and the bytes before them, and returns those bytes (aliasing v).
func checkSum(part string, key, v []byte) ([]byte, error) {
	if len(v) < SumLen {
		return nil, &ChecksumError{Part: part, Missing: fmt.Sprintf("%d bytes, shorter than a checksum", len(v))}
	}
	body := v[:len(v)-SumLen]
	stored, computed := binary.BigEndian.Uint32(v[len(body):]), sum(key, body)
	if stored != computed {
		return nil, &ChecksumError{Part: part, Stored: stored, Computed: computed}
	}
	return body, nil
}
