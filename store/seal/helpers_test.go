package seal_test

import (
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/warmcache/warmcache/store/seal"
)

// newKeyText returns the base64 text of a fresh random key.
func newKeyText(t testing.TB) string {
	t.Helper()
	b := make([]byte, seal.KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// newKey returns a fresh random key.
func newKey(t testing.TB) seal.Key {
	t.Helper()
	k, err := seal.ParseKey(newKeyText(t))
	if err != nil {
		t.Fatal(err)
	}
	return k
}
