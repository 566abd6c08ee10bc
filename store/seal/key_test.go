package seal_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/store/seal"
)

func TestParseKey(t *testing.T) {
	material := bytes.Repeat([]byte{7}, seal.KeySize)
	std := base64.StdEncoding.EncodeToString(material)
	for _, tc := range []struct {
		name, text string
		err        error
	}{
		{"padded", std, nil},
		{"unpadded", strings.TrimRight(std, "="), nil},
		{"surrounding space", "  " + std + "\n", nil},
		{"short", base64.StdEncoding.EncodeToString(material[:31]), seal.ErrInvalidKey},
		{"not base64", "this is not a key!", seal.ErrInvalidKey},
		{"empty", "", seal.ErrInvalidKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := seal.ParseKey(tc.text)
			if !errors.Is(err, tc.err) {
				t.Fatalf("ParseKey: %v, want %v", err, tc.err)
			}
			if err != nil {
				if strings.Contains(err.Error(), strings.TrimSpace(tc.text)) && tc.text != "" {
					t.Errorf("the error %q echoes the key material", err)
				}
				return
			}
			want, _ := seal.NewKey(material)
			if k.ID() != want.ID() || len(k.ID()) != 2*seal.IDSize {
				t.Errorf("ID %q, want %q", k.ID(), want.ID())
			}
		})
	}
}

func TestKeyIDIsStableAndDistinct(t *testing.T) {
	a1, _ := seal.NewKey(bytes.Repeat([]byte{1}, 32))
	a2, _ := seal.NewKey(bytes.Repeat([]byte{1}, 32))
	b, _ := seal.NewKey(bytes.Repeat([]byte{2}, 32))
	if a1.ID() != a2.ID() {
		t.Errorf("same material, IDs %s and %s", a1.ID(), a2.ID())
	}
	if a1.ID() == b.ID() {
		t.Errorf("different material, same ID %s", a1.ID())
	}
	if strings.Contains(a1.ID(), "0101") {
		t.Errorf("ID %s looks like the material", a1.ID())
	}
}

func TestFromFile(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := newKeyText(t), newKeyText(t)
	path := filepath.Join(dir, "keys")
	if err := os.WriteFile(path, []byte("# rotated on Monday\n"+k1+"\n\n"+k2+"\n"+k1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := seal.FromFile(path).Keys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := seal.ParseKey(k1)
	p2, _ := seal.ParseKey(k2)
	if len(keys) != 2 || keys[0].ID() != p1.ID() || keys[1].ID() != p2.ID() {
		t.Fatalf("keys %v, want [%s %s] (first line first, duplicates dropped)", ids(keys), p1.ID(), p2.ID())
	}

	for name, content := range map[string]string{"empty": "\n# nothing\n", "bad line": k1 + "\nnot-base64!\n"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := seal.FromFile(p).Keys(t.Context()); !errors.Is(err, seal.ErrInvalidKey) {
				t.Fatalf("Keys: %v, want ErrInvalidKey", err)
			}
		})
	}
	if _, err := seal.FromFile(filepath.Join(dir, "missing")).Keys(t.Context()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want os.ErrNotExist", err)
	}
}

func TestFromEnv(t *testing.T) {
	k1, k2 := newKeyText(t), newKeyText(t)
	t.Setenv("WARMCACHE_TEST_KEYS", k1+", "+k2)
	keys, err := seal.FromEnv("WARMCACHE_TEST_KEYS").Keys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := seal.ParseKey(k1)
	if len(keys) != 2 || keys[0].ID() != p1.ID() {
		t.Fatalf("keys %v, want 2 with %s first", ids(keys), p1.ID())
	}
	if _, err := seal.FromEnv("WARMCACHE_TEST_UNSET_VARIABLE").Keys(t.Context()); !errors.Is(err, seal.ErrInvalidKey) {
		t.Fatalf("unset variable: %v, want ErrInvalidKey", err)
	}
	t.Setenv("WARMCACHE_TEST_KEYS", " ")
	if _, err := seal.FromEnv("WARMCACHE_TEST_KEYS").Keys(t.Context()); !errors.Is(err, seal.ErrInvalidKey) {
		t.Fatalf("blank variable: %v, want ErrInvalidKey", err)
	}
}

func TestStaticRejectsZeroKey(t *testing.T) {
	if _, err := seal.Static(seal.Key{}).Keys(t.Context()); !errors.Is(err, seal.ErrInvalidKey) {
		t.Fatalf("zero key: %v, want ErrInvalidKey", err)
	}
	if _, err := seal.Static().Keys(t.Context()); !errors.Is(err, seal.ErrInvalidKey) {
		t.Fatalf("no key: %v, want ErrInvalidKey", err)
	}
}

func ids(keys []seal.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.ID()
	}
	return out
}
