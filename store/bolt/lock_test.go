//go:build linux

package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/filelock"
)

func init() {
	childRoles["readonlydir"] = childReadOnlyDir
}

// writePods writes a file holding podgen pods [0, n) at rv, closed.
func writePods(t *testing.T, path string, n int, rv string) {
	t.Helper()
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := openPods(t, db, namespaceIndexers())
	if err := s.Apply(context.Background(), podTxns(0, n, rv), rv); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestWriterDoesNotWaitForReaders checks that a read-write Open of a file
// a reader has open succeeds at once with the same data, that the reader
// keeps reading the file it opened, consistent and unchanged, while the
// writer writes, and that the writer's writes are what the path holds
// afterwards.
func TestWriterDoesNotWaitForReaders(t *testing.T) {
	path := tempPath(t)
	writePods(t, path, 50, "1")
	before := inode(t, path)

	reader := openDB(t, path, Options{ReadOnly: true})
	rs := openPods(t, reader, namespaceIndexers())

	// The reader holds its lock until it closes: the writer can only open
	// within its Timeout (the default, 1 s) if it does not wait for it.
	writer := openDB(t, path, Options{})
	if inode(t, path) == before {
		t.Fatal("the writer writes the file the reader has open")
	}
	if _, err := os.Stat(path + filelock.CopySuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary copy is left behind: %v", err)
	}
	ws := openPods(t, writer, namespaceIndexers())
	if err := expectPods(ws, "1", 50); err != nil {
		t.Fatalf("the writer's copy: %v", err)
	}

	// Churn: every page the reader reads is freed and reused by the writer
	// if they share the file.
	for round := range 5 {
		rv := fmt.Sprint(round + 2)
		if err := ws.Apply(context.Background(), podTxns(0, 200, rv), rv); err != nil {
			t.Fatal(err)
		}
		if err := expectPods(rs, "1", 50); err != nil {
			t.Fatalf("round %d: the reader's file changed: %v", round, err)
		}
	}
	for _, obj := range rs.List() {
		if rv := obj.(interface{ GetResourceVersion() string }).GetResourceVersion(); rv != "1" {
			t.Fatalf("the reader reads an object at RV %s, want 1", rv)
		}
	}
	verifyClean(t, reader)
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	if err := expectPods(ws, "6", 200); err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	again := openDB(t, path, Options{ReadOnly: true})
	if err := expectPods(openPods(t, again, namespaceIndexers()), "6", 200); err != nil {
		t.Errorf("after both closed: %v", err)
	}
}

// TestWritersExcludeEachOther checks that a second read-write Open fails
// with ErrLocked and the message it always had, with and without a reader
// holding the file, and that a writer that does not take the writers'
// lock (an older release) is waited for, not copied over.
func TestWritersExcludeEachOther(t *testing.T) {
	const msg = "cache file is locked by another open DB, in this process or another: timeout"
	for _, withReader := range []bool{false, true} {
		t.Run(fmt.Sprintf("reader=%v", withReader), func(t *testing.T) {
			path := tempPath(t)
			writePods(t, path, 5, "1")
			if withReader {
				openDB(t, path, Options{ReadOnly: true})
			}
			first := openDB(t, path, Options{})
			held := inode(t, path)
			_, err := Open(context.Background(), path, Options{Timeout: 50 * time.Millisecond})
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), msg) {
				t.Fatalf("second writer: %v, want ErrLocked (%q)", err, msg)
			}
			if inode(t, path) != held {
				t.Fatal("the second writer replaced the file the first one writes")
			}
			if err := expectPods(openPods(t, first, namespaceIndexers()), "1", 5); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("older writer", func(t *testing.T) {
		path := tempPath(t)
		writePods(t, path, 5, "1")
		// bbolt's own exclusive lock, without the writers' lock.
		old, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		held := inode(t, path)
		_, err = Open(context.Background(), path, Options{Timeout: 50 * time.Millisecond})
		if cerr := old.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), msg) {
			t.Fatalf("writer beside an older writer: %v, want ErrLocked", err)
		}
		if inode(t, path) != held {
			t.Fatal("the file an older writer writes was replaced")
		}
	})
	t.Run("reader waits for writer", func(t *testing.T) {
		path := tempPath(t)
		writePods(t, path, 5, "1")
		openDB(t, path, Options{})
		_, err := Open(context.Background(), path, Options{ReadOnly: true, Timeout: 50 * time.Millisecond})
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), msg) {
			t.Fatalf("reader of a written file: %v, want ErrLocked", err)
		}
	})
}

// TestReaderFollowsReplacedFile checks that a reader whose file is
// replaced by a writer while it checks it starts again on the new file,
// rather than reading one file checked as another.
func TestReaderFollowsReplacedFile(t *testing.T) {
	path := tempPath(t)
	writePods(t, path, 5, "1")
	before := inode(t, path)
	prev := fileCheckAtOpen
	t.Cleanup(func() { fileCheckAtOpen = prev })
	var replaced atomic.Bool
	var replaceErr error
	fileCheckAtOpen = func(ctx context.Context, p string, full bool) (filecheck.Report, error) {
		if replaced.CompareAndSwap(false, true) {
			// The reader holds the file: this writer copies it over, then
			// closes, leaving the new file free.
			var w *DB
			if w, replaceErr = Open(ctx, p, Options{}); replaceErr == nil {
				replaceErr = w.Close()
			}
		}
		return prev(ctx, p, full)
	}
	reader := openDB(t, path, Options{ReadOnly: true})
	if replaceErr != nil {
		t.Fatalf("the writer: %v", replaceErr)
	}
	after := inode(t, path)
	if after == before {
		t.Fatal("the writer did not replace the file")
	}
	if err := expectPods(openPods(t, reader, namespaceIndexers()), "1", 5); err != nil {
		t.Fatal(err)
	}
	// The reader holds the new file: a writer now has to copy it again.
	w := openDB(t, path, Options{})
	if inode(t, path) == after {
		t.Error("the reader does not hold the file path names")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyOpenCreatesNoLockFile checks that a read-only Open writes
// nothing beside the file, not even the writers' lock file, and that
// Remove deletes the lock file with the file.
func TestReadOnlyOpenCreatesNoLockFile(t *testing.T) {
	path := tempPath(t)
	writePods(t, path, 5, "1")
	if _, err := os.Stat(path + filelock.Suffix); err != nil {
		t.Fatalf("a writer left no lock file: %v", err)
	}
	if err := os.Remove(path + filelock.Suffix); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, path, Options{ReadOnly: true})
	if err := expectPods(openPods(t, db, namespaceIndexers()), "1", 5); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + filelock.Suffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a read-only Open created the lock file: %v", err)
	}
	writePods(t, path, 5, "1")
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + filelock.Suffix} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Remove left %s: %v", filepath.Base(p), err)
		}
	}
}

// TestReadOnlyDir checks a file whose directory cannot be written: a
// read-only Open reads it without a lock file, and a read-write Open
// returns ErrReadOnly.
func TestReadOnlyDir(t *testing.T) { runNamespaced(t, "readonlydir") }

func childReadOnlyDir() error {
	dir, path, err := writeTmpfsPods()
	if err != nil {
		return err
	}
	if err := os.Remove(path + filelock.Suffix); err != nil {
		return err
	}
	ctx := context.Background()
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount read-only: %w", err)
	}
	db, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("read-only Open without a lock file: %w", err)
	}
	s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()})
	if err == nil {
		err = expectPods(s, "5", 10)
	}
	if err := errors.Join(err, db.Close()); err != nil {
		return err
	}
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrReadOnly) {
		return fmt.Errorf("read-write Open in a read-only directory = %v, want ErrReadOnly", err)
	}
	if _, err := os.Stat(path + filelock.Suffix); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("a lock file appeared on a read-only file system: %v", err)
	}
	return nil
}

// TestReaderCheckSkipsAFileReplacedByAWriter: a reader's background check
// walks the file the reader mapped, never the copy a writer put at its
// path since (which the reader's root and page count do not describe):
// it reports the replacement, not corruption, and the reader's file stays
// sound.
func TestReaderCheckSkipsAFileReplacedByAWriter(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	writePods(t, path, 50, "1")
	reader := openDB(t, path, Options{ReadOnly: true})
	if res, err := reader.WaitFileCheck(ctx); err != nil || res.Err != nil || res.Skipped != "" {
		t.Fatalf("reader's first check = %+v, %v, want sound", res, err)
	}
	w := openDB(t, path, Options{}) // copies the file over its path
	s := openPods(t, w, namespaceIndexers())
	must(t, s.Apply(ctx, podTxns(50, 200, "2"), "2"))

	if err := reader.checkFile(ctx); !errors.Is(err, errFileReplaced) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("reader's check after the writer replaced the file = %v, want errFileReplaced", err)
	}
	if c := reader.FileCheck().Corrupt; c != nil {
		t.Fatalf("reader found corruption: %v", c)
	}
}
