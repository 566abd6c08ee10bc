package layout

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
)

// Index keys are escaped(value) 0x00 key. The escaping keeps 0x00 out of
// the value part so that the first 0x00 always ends it: 0x00 is written as
// 0x01 0x01 and 0x01 as 0x01 0x02. Values without those bytes are stored
// as is, so the layout reads as <value>\x00<key>. The entry's value is the
// checksum (IndexSum).
//
// bbolt refuses keys longer than 32 KiB, and client-go indexes values of
// any length (an index function may return an annotation whole). A value
// longer than MaxInlineIndexValue bytes is filed under
//
//	escaped(value[:hashedPrefixLen]) 0x01 0x03 hex(SHA-256(value)) 0x00 key
//
// and its entry holds the value itself after the checksum, so that
// ListIndexFuncValues and Verify can read it. An escaped value has no 0x01
// 0x03 where an escape starts (it may hold those bytes one byte off: 0x00
// 0x03 escapes to 0x01 0x01 0x03), so such a prefix never equals an inline
// one, nor starts one (both end at their first 0x00). Lookups compute the
// same prefix from the value. Schema version 6 stored every value inline, and so could not hold
// one whose key passed bbolt's limit.

// MaxInlineIndexValue is the longest index value stored in its index keys
// as it is (escaped); longer ones are filed under a prefix and a hash.
const MaxInlineIndexValue = 1024

// hashedPrefixLen is the number of bytes of a long value kept in its key,
// so that values sharing a beginning stay near each other in key order.
const hashedPrefixLen = 256

// hashedMarker follows the kept bytes of a long value in its key.
var hashedMarker = []byte{0x01, 0x03}

// hashed reports whether value is filed under a hash.
func hashed(value string) bool { return len(value) > MaxInlineIndexValue }

// AppendIndexPrefix appends the part of the index keys of value before the
// object key: escaped(value) 0x00, or that of a long value.
func AppendIndexPrefix(dst []byte, value string) []byte {
	if !hashed(value) {
		return append(appendEscaped(dst, value), 0x00)
	}
	dst = append(appendEscaped(dst, value[:hashedPrefixLen]), hashedMarker...)
	h := sha256.Sum256([]byte(value))
	dst = hex.AppendEncode(dst, h[:])
	return append(dst, 0x00)
}

func appendEscaped(dst []byte, value string) []byte {
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case 0x00:
			dst = append(dst, 0x01, 0x01)
		case 0x01:
			dst = append(dst, 0x01, 0x02)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// IndexKey is the index entry key of object key under value.
func IndexKey(value, key string) []byte {
	n := len(value)
	if hashed(value) {
		n = 2*hashedPrefixLen + len(hashedMarker) + 2*sha256.Size
	}
	b := AppendIndexPrefix(make([]byte, 0, n+len(key)+2), value)
	return append(b, key...)
}

// IndexSum computes and checks the checksums of the entries of one index:
// the value of entry k is the CRC-32C of the index name, 0x00, k and the
// long value the entry holds (none for an inline one), then that value.
type IndexSum struct {
	seed uint32
}

// NewIndexSum returns the IndexSum of index name.
func NewIndexSum(name string) IndexSum {
	return IndexSum{seed: sum(append([]byte(name), 0x00), nil)}
}

// Value returns the value of index entry k = IndexKey(value, key).
func (x IndexSum) Value(k []byte, value string) []byte {
	var held []byte
	if hashed(value) {
		held = []byte(value)
	}
	c := crc32.Update(crc32.Update(x.seed, castagnoli, k), castagnoli, held)
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, SumLen+len(held)), c), held...)
}

// Verify checks the checksum of index entry k whose value is v; the error
// matches ErrChecksum.
func (x IndexSum) Verify(k, v []byte) error {
	if len(v) < SumLen {
		return &ChecksumError{Part: PartIndex, Missing: fmt.Sprintf("a value of %d bytes", len(v))}
	}
	computed := crc32.Update(crc32.Update(x.seed, castagnoli, k), castagnoli, v[SumLen:])
	if stored := binary.BigEndian.Uint32(v); stored != computed {
		return &ChecksumError{Part: PartIndex, Stored: stored, Computed: computed}
	}
	return nil
}

// SplitIndexKey returns the value and object key of index entry k whose
// value (checksum and, for a long value, the value) is v. It checks that
// a long value is the one its key was computed from; checksums are
// Verify's.
func SplitIndexKey(k, v []byte) (value, key string, err error) {
	i := bytes.IndexByte(k, 0x00)
	if i < 0 {
		return "", "", errors.New("index key without separator")
	}
	esc, key := k[:i], string(k[i+1:])
	var held []byte
	if len(v) > SumLen {
		held = v[SumLen:]
	}
	if hasMarker(esc) {
		if !hashed(string(held)) {
			return "", key, fmt.Errorf("index key of a long value whose entry holds %d bytes of it", len(held))
		}
		if !bytes.Equal(AppendIndexPrefix(nil, string(held)), k[:i+1]) {
			return "", key, errors.New("index key of a long value that is not the value its entry holds")
		}
		return string(held), key, nil
	}
	if held != nil {
		return "", key, fmt.Errorf("index key of an inline value whose entry holds %d more bytes", len(held))
	}
	val := esc
	if bytes.IndexByte(esc, 0x01) >= 0 {
		if val, err = unescape(esc); err != nil {
			return "", key, err
		}
	}
	if hashed(string(val)) {
		return "", key, fmt.Errorf("inline index key of a %d-byte value", len(val))
	}
	return string(val), key, nil
}

// hasMarker reports whether the escaped bytes esc hold hashedMarker where
// an escape starts, as a long value's kept bytes are followed by it.
func hasMarker(esc []byte) bool {
	for j := 0; j+1 < len(esc); j++ {
		if esc[j] != 0x01 {
			continue
		}
		if esc[j+1] == hashedMarker[1] {
			return true
		}
		j++ // an escape: its second byte is not the start of another
	}
	return false
}

// unescape reverses appendEscaped.
func unescape(esc []byte) ([]byte, error) {
	val := make([]byte, 0, len(esc))
	for j := 0; j < len(esc); j++ {
		if esc[j] != 0x01 {
			val = append(val, esc[j])
			continue
		}
		if j+1 == len(esc) {
			return nil, errors.New("index key with a dangling escape")
		}
		j++
		switch esc[j] {
		case 0x01:
			val = append(val, 0x00)
		case 0x02:
			val = append(val, 0x01)
		default:
			return nil, errors.New("index key with an invalid escape")
		}
	}
	return val, nil
}
