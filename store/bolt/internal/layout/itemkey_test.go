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

// TestIndexBucketName checks that index bucket names are never empty (bbolt
// refuses them), are one-to-one, and leave ordinary names as they are.
func TestIndexBucketName(t *testing.T) {
	names := []string{"", "\x00", "\x00\x00", "\x00namespace", "namespace", "a/b", "\xff"}
	seen := map[string]string{}
	for _, n := range names {
		b := IndexBucketName(n)
		if len(b) == 0 {
			t.Errorf("IndexBucketName(%q) is empty", n)
		}
		if got := IndexNameOf(b); got != n {
			t.Errorf("IndexNameOf(IndexBucketName(%q)) = %q", n, got)
		}
		if other, ok := seen[string(b)]; ok {
			t.Errorf("IndexBucketName(%q) = IndexBucketName(%q) = %q", n, other, b)
		}
		seen[string(b)] = n
	}
	if got := IndexBucketName("namespace"); string(got) != "namespace" {
		t.Errorf("IndexBucketName(namespace) = %q, want the name as it is", got)
	}
}
