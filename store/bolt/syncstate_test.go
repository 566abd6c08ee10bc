package bolt

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/filelock"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// withBoot makes bootID return id (or fail, for "") until the test ends.
func withBoot(t *testing.T, id string) {
	t.Helper()
	prev := bootID
	t.Cleanup(func() { bootID = prev })
	bootID = func() (string, error) {
		if id == "" {
			return "", errors.New("no boot id here")
		}
		return id, nil
	}
}

func mustSyncState(t *testing.T, path string) syncstate.State {
	t.Helper()
	st, ok, err := syncstate.Read(path)
	if err != nil || !ok {
		t.Fatalf("state file of %s: ok %v, err %v", path, ok, err)
	}
	return st
}

// noStateFile fails the test if path has a state file.
func noStateFile(t *testing.T, path, when string) {
	t.Helper()
	if _, err := os.Stat(path + layout.StateSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state file %s: %v, want none", when, err)
	}
}

// objectsAfterRestart simulates a restart of the machine into boot, opens
// path with the default policy and returns the number of pods it holds.
func objectsAfterRestart(t *testing.T, path, boot string) int {
	t.Helper()
	withBoot(t, boot)
	db := openDB(t, path, Options{})
	return len(openPods(t, db, nil).ListKeys())
}

// writeOne opens path with opts, stores one pod at RV 1 and returns the
// DB, still open.
func writeOne(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := openPods(t, db, nil)
	if err := s.Add(mkPod("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	return db
}

// abandon closes db the way a killed process leaves it: the bbolt file is
// released, the state file keeps what Open wrote.
func abandon(t *testing.T, db *DB) {
	t.Helper()
	b, err := os.ReadFile(db.path + layout.StateSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db.path+layout.StateSuffix, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSyncOnCloseStates(t *testing.T) {
	ctx := context.Background()
	withBoot(t, "boot-1")
	path := tempPath(t)
	db := writeOne(t, path, Options{})
	if st := mustSyncState(t, path); st.State != syncstate.Open || st.Boot != "boot-1" || st.PID != os.Getpid() {
		t.Fatalf("state while open = %+v, want open in boot-1 by this process", st)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if st := mustSyncState(t, path); st.State != syncstate.Closed {
		t.Fatalf("state after Close = %+v, want closed", st)
	}

	// A closed file is trusted after a restart of the machine.
	withBoot(t, "boot-2")
	db = openDB(t, path, Options{})
	if _, ok, _ := openPods(t, db, nil).GetByKey("ns/a"); !ok {
		t.Fatal("closed file lost its object across a restart")
	}
	abandon(t, db)

	// Abandoned (the process died): trusted in the same boot...
	db = openDB(t, path, Options{ReadOnly: true})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// ...and refused after a restart, read-only or not, without touching
	// the file or its state.
	withBoot(t, "boot-3")
	before, _ := os.ReadFile(path + layout.StateSuffix)
	for _, ro := range []bool{true, false} {
		_, err := Open(ctx, path, Options{ReadOnly: ro})
		if !errors.Is(err, ErrUnflushed) || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open(ReadOnly %v) after a restart = %v, want ErrUnflushed and ErrCorrupt", ro, err)
		}
	}
	if after, _ := os.ReadFile(path + layout.StateSuffix); string(after) != string(before) {
		t.Fatalf("a refused Open changed the state file: %s -> %s", before, after)
	}

	// The caller moves it aside, state file included, and starts afresh.
	moved, err := MoveAside(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(moved + layout.StateSuffix); err != nil {
		t.Fatalf("state file not moved with the file: %v", err)
	}
	db = openDB(t, path, Options{})
	if n := len(openPods(t, db, nil).ListKeys()); n != 0 {
		t.Fatalf("new file holds %d objects", n)
	}
}

func TestSyncStateRefusesUnknownStates(t *testing.T) {
	withBoot(t, "boot-1")
	for name, content := range map[string]string{
		"garbage":                   "{not json",
		"unflushed":                 `{"state":"unflushed"}`,
		"unknown":                   `{"state":"maybe"}`,
		"open, no boot id recorded": `{"state":"open"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := tempPath(t)
			if err := writeOne(t, path, Options{}).Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+layout.StateSuffix, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(context.Background(), path, Options{}); !errors.Is(err, ErrUnflushed) {
				t.Fatalf("Open = %v, want ErrUnflushed", err)
			}
		})
	}
}

// A flushing policy takes over a file an earlier SyncOnClose writer left
// open: it flushes and drops the state file, so the file is trusted after a
// restart (every commit from then on is flushed).
func TestFlushingPolicyTakesOverState(t *testing.T) {
	withBoot(t, "boot-1")
	for _, sync := range []SyncPolicy{SyncNoFreelist, SyncFull} {
		t.Run(sync.String(), func(t *testing.T) {
			path := tempPath(t)
			abandon(t, writeOne(t, path, Options{}))
			db := openDB(t, path, Options{Sync: sync})
			noStateFile(t, path, "after a "+sync.String()+" open")
			if err := openPods(t, db, nil).Add(mkPod("ns", "b", "2")); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if n := objectsAfterRestart(t, path, "boot-2"); n != 2 {
				t.Fatalf("%d objects after the restart, want 2", n)
			}
		})
	}
}

// Without a boot id SyncOnClose cannot tell a dead process from a dead
// machine: it flushes every commit instead and keeps no state file.
func TestSyncOnCloseWithoutBootID(t *testing.T) {
	withBoot(t, "")
	path := tempPath(t)
	if err := writeOne(t, path, Options{}).Close(); err != nil {
		t.Fatal(err)
	}
	noStateFile(t, path, "without a boot id")
}

// A state file beside a file that does not exist describes nothing: a new
// file starts with its own.
func TestStaleStateFileOfMissingFile(t *testing.T) {
	withBoot(t, "boot-2")
	path := filepath.Join(checkedDir(t), "cache.db")
	if err := os.WriteFile(path+layout.StateSuffix, []byte(`{"state":"open","boot":"boot-1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, path, Options{})
	if st := mustSyncState(t, path); st.State != syncstate.Open || st.Boot != "boot-2" {
		t.Fatalf("state of the new file = %+v", st)
	}
	_ = db
}

func TestRemoveTakesTheStateFile(t *testing.T) {
	path := tempPath(t)
	if err := writeOne(t, path, Options{}).Close(); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + layout.StateSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Remove: %v, want it gone", p, err)
		}
	}
	if err := Remove(path); err != nil {
		t.Errorf("Remove of a missing file = %v, want nil", err)
	}
}

// A refused file is left as it was found: no state file appears beside a
// foreign bbolt file.
func TestRefusedFileGetsNoStateFile(t *testing.T) {
	path := damagedPath(t)
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucket([]byte("someone-else"))
		return err
	})
	if _, err := Open(context.Background(), path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a foreign bbolt file = %v, want ErrCorrupt", err)
	}
	noStateFile(t, path, "beside a refused file")
}

// When the state file cannot be written, Open falls back to flushing every
// commit, so the file never depends on a state nobody recorded.
func TestSyncOnCloseFallsBackWhenStateCannotBeWritten(t *testing.T) {
	withBoot(t, "boot-1")
	prev := writeState
	t.Cleanup(func() { writeState = prev })
	writeState = func(string, syncstate.State, os.FileMode) error { return ErrDiskFull }
	path := tempPath(t)
	db := writeOne(t, path, Options{})
	if db.opts.Sync != SyncNoFreelist || db.bolt.NoSync {
		t.Fatalf("policy after a failed state write: %v (bbolt NoSync %v), want SyncNoFreelist flushing", db.opts.Sync, db.bolt.NoSync)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	noStateFile(t, path, "after a failed state write")
	writeState = prev
	if n := objectsAfterRestart(t, path, "boot-2"); n != 1 {
		t.Fatalf("%d objects after a restart, want 1", n)
	}
}

// UnsafeNoSync records that its file is open unflushed and never that it
// was closed: after a restart of the machine its file is refused.
func TestUnsafeNoSyncNeverClaimsClosed(t *testing.T) {
	withBoot(t, "boot-1")
	path := tempPath(t)
	if err := writeOne(t, path, Options{}).Close(); err != nil { // "closed" by SyncOnClose
		t.Fatal(err)
	}
	if err := writeOne(t, path, Options{Sync: UnsafeNoSync}).Close(); err != nil {
		t.Fatal(err)
	}
	if st := mustSyncState(t, path); st.State != syncstate.Open || st.Boot != "boot-1" {
		t.Fatalf("state after an UnsafeNoSync Close = %+v, want open in boot-1", st)
	}
	withBoot(t, "boot-2")
	if _, err := Open(context.Background(), path, Options{ReadOnly: true}); !errors.Is(err, ErrUnflushed) {
		t.Fatalf("Open after a restart = %v, want ErrUnflushed", err)
	}
}

// Whether a file is new is decided under the lock: a file another process
// created since Open looked is checked like any other.
func TestStateCheckedForFileCreatedAfterTheLook(t *testing.T) {
	withBoot(t, "boot-1")
	path := tempPath(t)
	if err := writeOne(t, path, Options{}).Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+layout.StateSuffix, []byte(`{"state":"unflushed"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	prev := fileCheckAtOpen
	t.Cleanup(func() { fileCheckAtOpen = prev })
	fileCheckAtOpen = func(context.Context, string, bool) (filecheck.Report, error) {
		return filecheck.Report{}, fs.ErrNotExist
	} // "not there yet"
	for _, sync := range []SyncPolicy{SyncOnClose, SyncNoFreelist, SyncFull, UnsafeNoSync} {
		if _, err := Open(context.Background(), path, Options{Sync: sync}); !errors.Is(err, ErrUnflushed) {
			t.Fatalf("Open(%v) of a file whose state is unflushed = %v, want ErrUnflushed", sync, err)
		}
	}
}

// A refused file is left byte for byte as it was found, whatever the
// policy of the Open that refused it (bbolt writes a freelist inside its
// own Open for SyncFull and UnsafeNoSync unless told not to).
func TestRefusedFileUnchangedByAnyPolicy(t *testing.T) {
	withBoot(t, "boot-1")
	path := tempPath(t)
	abandon(t, writeOne(t, path, Options{}))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	withBoot(t, "boot-2")
	for _, sync := range []SyncPolicy{SyncOnClose, SyncNoFreelist, SyncFull, UnsafeNoSync} {
		if _, err := Open(context.Background(), path, Options{Sync: sync}); !errors.Is(err, ErrUnflushed) {
			t.Fatalf("Open(%v) = %v, want ErrUnflushed", sync, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatalf("a refused Open(%v) changed the file", sync)
		}
	}
}

func TestStateFileTakesTheFileMode(t *testing.T) {
	withBoot(t, "boot-1")
	path := tempPath(t)
	db := writeOne(t, path, Options{FileMode: 0o640})
	defer func() { _ = db.Close() }()
	fi, err := os.Stat(path + layout.StateSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("state file mode %v, want 0640 like the file", fi.Mode().Perm())
	}
}

// A DB whose file was moved aside while it was open (by another process
// that found it unusable) does not record its state over the new file's.
func TestCloseLeavesAnotherFilesState(t *testing.T) {
	withBoot(t, "boot-1")
	path := tempPath(t)
	first := writeOne(t, path, Options{})
	if _, err := MoveAside(path); err != nil {
		t.Fatal(err)
	}
	// The writers' lock guards the path, so the other process must not
	// take it (a release from before it): it would wait for the first.
	if err := os.Remove(path + filelock.Suffix); err != nil {
		t.Fatal(err)
	}
	second := writeOne(t, path, Options{})
	defer func() { _ = second.Close() }()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if st := mustSyncState(t, path); st.State != syncstate.Open {
		t.Fatalf("state of the second file after the first closed = %+v, want open", st)
	}
}

// Close records the file closed only after the last commit: a write that
// is running when Close starts commits before the flush, and none starts
// after it.
func TestCloseWaitsForRunningWrites(t *testing.T) {
	withBoot(t, "boot-1")
	path := tempPath(t)
	db := writeOne(t, path, Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- db.update("slow write", func(tx *bbolt.Tx) error {
			close(entered)
			<-release
			b, err := tx.CreateBucketIfNotExists([]byte("late"))
			if err != nil {
				return err
			}
			return b.Put([]byte("k"), []byte("v"))
		})
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	for !db.isClosed() {
		runtime.Gosched()
	}
	// Close has begun and must now wait for the running write: the state
	// must not say closed while the write is uncommitted.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if st, _, _ := syncstate.Read(path); st.State == syncstate.Closed {
			t.Fatal("state recorded closed while a write was still running")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatalf("running write: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := db.update("after close", func(*bbolt.Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close = %v, want ErrClosed", err)
	}
	if st := mustSyncState(t, path); st.State != syncstate.Closed {
		t.Fatalf("state after Close = %+v, want closed", st)
	}
}
