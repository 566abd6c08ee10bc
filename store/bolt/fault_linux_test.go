package bolt

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/warmcache/warmcache/store/bolt/internal/parallel"
)

// The decoding goroutines read stored bytes through the mapping too: a
// fault there (a page past the end of a file truncated under the mapping)
// is that object's ErrCorrupt, not a crash, and the file is reported
// corrupt.
func TestDecodeFault(t *testing.T) {
	db := openDB(t, tempPath(t), Options{})
	s := openPods(t, db, namespaceIndexers())

	path := filepath.Join(t.TempDir(), "mapped")
	size := 2 * os.Getpagesize()
	must(t, os.WriteFile(path, make([]byte, size), 0o600))
	f, err := os.Open(path)
	must(t, err)
	defer func() { _ = f.Close() }()
	mapped, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	must(t, err)
	defer func() { _ = syscall.Munmap(mapped) }()
	must(t, os.Truncate(path, 0)) // every byte of mapped now faults

	chunk := make([]selected, 4*parallel.Min) // enough for several workers
	for i := range chunk {
		chunk[i] = selected{key: "ns/pod", k: []byte("ns/pod"), env: mapped[i%size : i%size+1]}
	}
	errs := s.decodeSelected(chunk, 2)
	if len(errs) != len(chunk) {
		t.Fatalf("%d errors for %d objects that fault, want one each", len(errs), len(chunk))
	}
	for i, err := range errs {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("object %d: %v, want ErrCorrupt", i, err)
		}
	}
	if res := db.FileCheck(); !errors.Is(res.Corrupt, ErrCorrupt) {
		t.Errorf("file check = %+v, want the file reported corrupt", res)
	}
	db.bg.Wait()
}
