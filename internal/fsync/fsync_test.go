package fsync

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	if err := Dir(t.TempDir()); err != nil {
		t.Fatalf("Dir of a directory = %v", err)
	}
	if err := Dir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Dir of a missing directory = %v, want fs.ErrNotExist", err)
	}
}
