package inspect_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// TestMetaPages checks that MetaPages finds both meta pages of a sound
// file valid, and names a damaged one and the page bbolt falls back to.
func TestMetaPages(t *testing.T) {
	// Not a .db file: the end-of-test check would report the damage.
	path := filepath.Join(t.TempDir(), "cache.damaged")
	db, err := bolt.Open(context.Background(), path, bolt.Options{})
	must(t, err)
	must(t, db.Close())
	pages, chosen, err := inspect.MetaPages(path)
	if err != nil || !pages[0].Valid || !pages[1].Valid || chosen < 0 {
		t.Fatalf("sound file: pages %+v, chosen %d, err %v", pages, chosen, err)
	}
	newer := chosen
	// Tear the newer page: a byte its checksum covers, header intact.
	off := int64(newer)*int64(filePageSize(t, path)) + 16 + 24
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	must(t, err)
	b[0] ^= 0xff
	_, err = f.WriteAt(b, off)
	must(t, err)
	must(t, f.Close())
	pages, chosen, err = inspect.MetaPages(path)
	if err != nil || pages[newer].Valid || pages[newer].Problem != "checksum mismatch" || chosen != 1-newer || !pages[chosen].Valid {
		t.Errorf("torn page %d: pages %+v, chosen %d, err %v", newer, pages, chosen, err)
	}
	if _, _, err := inspect.MetaPages(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}
