package bolt

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt/internal/mapped"
)

// mappedRss returns the resident bytes of this process's mappings of the
// file at path (/proc/self/smaps).
func mappedRss(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	must(t, err)
	defer f.Close()
	var rss int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = len(fields) >= 6 && fields[5] == path
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			must(t, err)
			rss += kb << 10
		}
	}
	must(t, sc.Err())
	return rss
}

// bigPods writes n pods of about 4 KB each to s, in batches.
func bigPods(t *testing.T, s *Store, n int) {
	t.Helper()
	must(t, writeBigPods(s, n))
}

// writeBigPods is bigPods, returning the first error.
func writeBigPods(s *Store, n int) error {
	note := strings.Repeat("x", 4000)
	for i := 0; i < n; i += 250 {
		var batch []cache.Transaction
		for j := i; j < min(i+250, n); j++ {
			p := mkPod("ns", fmt.Sprintf("p%05d", j), strconv.Itoa(j+1))
			p.Annotations = map[string]string{"note": note}
			batch = append(batch, cache.Transaction{Type: cache.TransactionTypeAdd, Object: p})
		}
		if err := s.Apply(context.Background(), batch, ""); err != nil {
			return err
		}
	}
	return nil
}

// touchAll reads every byte of every value in the file through the
// mapping, without the store's accounting.
func touchAll(t *testing.T, db *DB) {
	t.Helper()
	var sum byte
	var walk func(b *bbolt.Bucket) error
	walk = func(b *bbolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(b.Bucket(k))
			}
			for _, c := range v {
				sum ^= c
			}
			return nil
		})
	}
	must(t, db.bolt.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { return walk(b) })
	}))
	_ = sum
}

// TestReleaseMapped checks that the DB drops the resident pages of its
// mapping once reads have touched mapped.ReleaseAfter bytes of it: a list of every
// object of a file several times that size leaves at most about that much
// mapped, where a read that touched every page without the store left the
// whole file mapped; and that the release never runs during a write.
func TestReleaseMapped(t *testing.T) {
	const n = 1500 // about 6 MB of envelopes
	// Idle once written: touchAll counts nothing, so no release runs
	// while it reads.
	path, db, s := mappedPods(t, n)
	fi, err := os.Stat(path)
	must(t, err)
	if fi.Size() < 4*mapped.ReleaseAfter {
		t.Fatalf("file of %d bytes: want at least %d", fi.Size(), 4*mapped.ReleaseAfter)
	}

	touchAll(t, db)
	if rss := mappedRss(t, path); rss < 4*mapped.ReleaseAfter {
		t.Fatalf("after reading every page: %d bytes mapped, want the file's (%d)", rss, fi.Size())
	}
	db.writeGate.RLock() // a write transaction running
	if db.releaseMapped() {
		t.Error("releaseMapped during a write: released, want skipped")
	}
	db.writeGate.RUnlock()
	if !db.releaseMapped() {
		t.Fatal("releaseMapped: skipped, want released")
	}
	if rss := mappedRss(t, path); rss > mapped.ReleaseAfter/4 {
		t.Fatalf("after releaseMapped: %d bytes mapped, want few", rss)
	}

	objs := s.List()
	if len(objs) != n {
		t.Fatalf("List: %d objects, want %d", len(objs), n)
	}
	for _, o := range objs {
		if p := o.(*corev1.Pod); len(p.Annotations["note"]) != 4000 {
			t.Fatalf("List: %s with a note of %d bytes", p.Name, len(p.Annotations["note"]))
		}
	}
	if rss := mappedRss(t, path); rss > 2*mapped.ReleaseAfter {
		t.Errorf("after a List of the %d-byte file: %d bytes mapped, want at most %d", fi.Size(), rss, 2*mapped.ReleaseAfter)
	}
	verifyClean(t, db)
}

// within waits up to mapped.ReleaseIdle and the test timeout for done,
// and fails with what it describes if it never is.
func within(t *testing.T, done func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(mapped.ReleaseIdle + testkit.Timeout())
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal(describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// idle waits until the release the writes to db armed (mapped.ReleaseIdle
// after the first) has run and found nothing counted or released it, so
// that the next read arms its own.
func idle(t *testing.T, db *DB) {
	t.Helper()
	within(t, func() bool { return !db.use.Pending() && db.use.Counted() == 0 }, func() string {
		return fmt.Sprintf("the release the writes armed never ran: pending %v, %d bytes counted", db.use.Pending(), db.use.Counted())
	})
}

// mappedPods opens a file whose reads all go through the mapping (no hot
// tier), writes n pods of about 4 KB to it and waits until the release its
// writes armed has run (idle).
func mappedPods(t *testing.T, n int) (string, *DB, *Store) {
	t.Helper()
	path := tempPath(t)
	zero := int64(0)
	db := openDB(t, path, Options{Sync: UnsafeNoSync, HotBytes: &zero})
	s := openPods(t, db, namespaceIndexers())
	bigPods(t, s, n)
	idle(t, db)
	return path, db, s
}

// TestReleaseMappedWhenIdle checks that what reads touched below
// mapped.ReleaseAfter does not stay mapped: a list of a resource smaller
// than that is released about mapped.ReleaseIdle later.
func TestReleaseMappedWhenIdle(t *testing.T) {
	const n = 100 // about 400 KB of envelopes
	path, db, s := mappedPods(t, n)
	if objs := s.List(); len(objs) != n {
		t.Fatalf("List: %d objects, want %d", len(objs), n)
	}
	// Without the idle release, what the List touched (about 400 KB)
	// would stay mapped: below ReleaseAfter, nothing else releases it.
	var rss int64
	within(t, func() bool { rss = mappedRss(t, path); return rss <= mapped.ReleaseAfter/8 }, func() string {
		return fmt.Sprintf("after the List: %d bytes still mapped", rss)
	})
	verifyClean(t, db)
}

// TestGrowDoesNotWaitForReaders checks that a write growing a new file to
// several MiB commits while a read transaction stays open: bbolt maps the
// file at mapped.InitialSize from the start, so no commit has to map it
// again, which would wait for every open read to end (here, forever).
func TestGrowDoesNotWaitForReaders(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path, Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	tx, err := db.bolt.Begin(false)
	must(t, err)
	done := make(chan error, 1)
	go func() { done <- writeBigPods(s, 1000) }() // about 4 MB
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(testkit.Timeout()):
		_ = tx.Rollback() // let the write end before the test does
		<-done
		t.Fatal("a write growing the file waited for an open read transaction")
	}
	must(t, tx.Rollback())
	fi, err := os.Stat(path)
	must(t, err)
	if fi.Size() < 4<<20 {
		t.Fatalf("file of %d bytes: want at least 4 MiB", fi.Size())
	}
}
