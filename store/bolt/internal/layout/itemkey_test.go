package layout

import (
	"bytes"
	"slices"
	"testing"
)

// TestItemKeyEncoding checks that the item key encoding is one-to-one,
// never yields bbolt's refused empty key, keeps the order of keys, and
// leaves ordinary keys as they are.
func TestItemKeyEncoding(t *testing.T) {
	keys := []string{"", "\x00", "\x00\x00", "\x00\x01", "\x00a", "\x01", "\x01\x00", "a", "ns/a", "ns/b", "\xff"}
	if !slices.IsSorted(keys) {
		t.Fatal("test keys are not sorted")
	}
	var prev []byte
	for i, k := range keys {
		enc := EncodeItemKey([]byte(k))
		if len(enc) == 0 {
			t.Errorf("EncodeItemKey(%q) is empty", k)
		}
		if got := DecodeItemKey(enc); string(got) != k || got == nil {
			t.Errorf("DecodeItemKey(EncodeItemKey(%q)) = %q (nil %v)", k, got, got == nil)
		}
		if i > 0 && bytes.Compare(prev, enc) >= 0 {
			t.Errorf("EncodeItemKey(%q) = %q does not sort after %q", k, enc, prev)
		}
		prev = enc
	}
	if k := []byte("ns/a"); &EncodeItemKey(k)[0] != &k[0] {
		t.Error("EncodeItemKey copied an ordinary key")
	}
	if DecodeItemKey(nil) != nil {
		t.Error("DecodeItemKey(nil) is not nil: a cursor's end would be lost")
	}
}
