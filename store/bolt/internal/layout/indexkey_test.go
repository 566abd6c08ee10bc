package layout

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// TestIndexKeyLongValues checks that a long value is filed under a key
// bbolt takes, round-trips through its entry, and that an entry whose held
// value does not match its key is refused even with a valid checksum.
func TestIndexKeyLongValues(t *testing.T) {
	sums := NewIndexSum("byUser")
	long := strings.Repeat("u", 200<<10)
	cases := []struct{ name, value string }{
		{"inline at the limit", strings.Repeat("a", MaxInlineIndexValue)},
		{"one byte over", strings.Repeat("a", MaxInlineIndexValue+1)},
		{"long", long},
		{"long with escaped bytes", "\x00\x01" + long},
		// 0x00 0x03 escapes to 0x01 0x01 0x03, which holds the long
		// value's marker 0x01 0x03 one byte off an escape.
		{"inline with the marker's bytes after an escape", "\x00\x03"},
		{"inline with them inside", "a\x00\x03\x01\x03b"},
		{"long with them in its kept bytes", "\x00\x03" + long},
	}
	for _, tc := range cases {
		k := IndexKey(tc.value, "ns/one")
		if len(k) > bbolt.MaxKeySize {
			t.Errorf("%s: key of %d bytes, more than bbolt takes", tc.name, len(k))
		}
		entry := sums.Value(k, tc.value)
		if err := sums.Verify(k, entry); err != nil {
			t.Errorf("%s: Verify: %v", tc.name, err)
		}
		value, key, err := SplitIndexKey(k, entry)
		if err != nil || value != tc.value || key != "ns/one" {
			t.Errorf("%s: SplitIndexKey = %d-byte value, %q, %v", tc.name, len(value), key, err)
		}
		if !bytes.HasPrefix(k, AppendIndexPrefix(nil, tc.value)) {
			t.Errorf("%s: the key does not start with the value's prefix", tc.name)
		}
	}

	// Entries that a bug or a damaged file could hold, with valid
	// checksums: each is refused by SplitIndexKey.
	longKey := IndexKey(long, "ns/one")
	other := long[:len(long)-1] + "v"
	bad := []struct {
		name string
		k    []byte
		held string
	}{
		{"another long value under a long value's key", longKey, other},
		{"a long value's key holding nothing", longKey, ""},
		{"a long value's key holding a short value", longKey, "ernie"},
		{"an inline key holding a value", IndexKey("ernie", "ns/one"), long},
	}
	for _, b := range bad {
		entry := entryHolding(sums, b.k, b.held)
		if err := sums.Verify(b.k, entry); err != nil {
			t.Fatalf("%s: the test entry's checksum: %v", b.name, err)
		}
		if _, _, err := SplitIndexKey(b.k, entry); err == nil {
			t.Errorf("%s: SplitIndexKey accepted it", b.name)
		}
	}
}

// entryHolding returns an index entry value holding held, with a valid
// checksum.
func entryHolding(sums IndexSum, k []byte, held string) []byte {
	c := crc32.Update(crc32.Update(sums.seed, castagnoli, k), castagnoli, []byte(held))
	return append(binary.BigEndian.AppendUint32(nil, c), held...)
}
