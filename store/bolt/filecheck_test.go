package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// Close writes the freelist, so that the next Open neither walks the
// file nor lets bbolt walk it: the walk runs in the background and finds
// the file sound. A file whose writer died (no freelist) is walked by
// Open, as bbolt walks it too.
func TestCloseWritesFreelist(t *testing.T) {
	for _, sync := range []SyncPolicy{SyncOnClose, SyncNoFreelist, SyncFull, UnsafeNoSync} {
		t.Run(sync.String(), func(t *testing.T) {
			ctx := context.Background()
			path := tempPath(t)
			db := mustOpen(t, path, Options{Sync: sync})
			s := openPods(t, db, namespaceIndexers())
			must(t, s.Replace(podObjects(300), "1"))
			must(t, db.Close())
			rep, err := filecheck.CheckReport(ctx, path, filecheck.Options{SkipTreeWalk: true})
			must(t, err)
			if !rep.Persisted || rep.Walked {
				t.Fatalf("after Close: %+v, want a persisted freelist and no walk", rep)
			}

			db = mustOpen(t, path, Options{Sync: sync})
			res, err := db.WaitFileCheck(ctx)
			must(t, err)
			if !res.Done || res.AtOpen || res.Err != nil || res.Corrupt != nil {
				t.Fatalf("file check = %+v, want done in the background, sound", res)
			}
			s = openPods(t, db, namespaceIndexers())
			if err := s.WaitFileChecked(ctx); err != nil {
				t.Fatalf("WaitFileChecked of a sound file = %v", err)
			}
			if got := len(s.ListKeys()); got != 300 {
				t.Fatalf("%d keys after reopening, want 300", got)
			}
			must(t, db.Close())
		})
	}
	t.Run("writer died", func(t *testing.T) {
		ctx := context.Background()
		path := tempPath(t)
		bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{NoFreelistSync: true})
		must(t, err)
		must(t, bdb.Update(func(tx *bbolt.Tx) error { return writeFormat(tx) }))
		must(t, bdb.Close())
		rep, err := filecheck.CheckReport(ctx, path, filecheck.Options{SkipTreeWalk: true})
		must(t, err)
		if rep.Persisted || !rep.Walked {
			t.Fatalf("without a freelist: %+v, want a walk", rep)
		}
		db := mustOpen(t, path, Options{})
		if res := db.FileCheck(); !res.Done || !res.AtOpen || res.Err != nil {
			t.Fatalf("file check = %+v, want done at Open, sound", res)
		}
		must(t, db.Close())
	})
}

// A damaged page that Open does not read is found by the background
// check: logged, the resource marked incomplete, OnCorruption called,
// the metrics set, and the file recorded corrupt so that the next Open
// refuses it. Options.CheckAtOpen finds it in Open.
func TestBackgroundCheckFindsDamage(t *testing.T) {
	ctx := context.Background()
	base := buildCorruptBase(t, Options{})
	l := corruptLayoutOf(t, base)
	dir := uncheckedDir(t)
	// The last page in use that Open accepts damaged: a page of the data.
	var path string
	for _, id := range slices.Backward(l.inUse) {
		b := slices.Clone(base)
		copy(b[id*l.pageSize:(id+1)*l.pageSize], strings.Repeat("\xa5", l.pageSize))
		p := filepath.Join(dir, fmt.Sprintf("page-%d.db", id))
		must(t, os.WriteFile(p, b, 0o600))
		if _, err := Open(ctx, p, Options{CheckAtOpen: true}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open(CheckAtOpen) with page %d damaged = %v, want ErrCorrupt", id, err)
		}
		// Open and Resource must accept it.
		db, err := Open(ctx, p, Options{ReadOnly: true})
		if err != nil {
			continue
		}
		_, err = db.Resource(ctx, ResourceOptions{Identity: corruptPodsID, Codec: corruptPodsCodec, Indexers: namespaceIndexers()})
		must(t, db.Close())
		if err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("Open rejected every damaged page: nothing left for the background check")
	}

	m := newTestMetrics()
	db, err := Open(ctx, path, Options{Metrics: m})
	must(t, err)
	var mu sync.Mutex
	var reported []error
	s, err := db.Resource(ctx, ResourceOptions{Identity: corruptPodsID, Codec: corruptPodsCodec, Indexers: namespaceIndexers(),
		OnCorruption: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, err)
		}})
	must(t, err)
	res, err := db.WaitFileCheck(ctx)
	must(t, err)
	var ce *filecheck.CorruptionError
	if !errors.Is(res.Err, ErrCorrupt) || !errors.As(res.Err, &ce) || ce.Page < 2 || !errors.Is(res.Corrupt, ErrCorrupt) {
		t.Fatalf("file check = %+v, want ErrCorrupt naming the page", res)
	}
	// What the informer waits for before it replays the store to handlers.
	if err := s.WaitFileChecked(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("WaitFileChecked = %v, want ErrCorrupt", err)
	}
	db.bg.Wait()
	if st := mustState(t, s); st.Complete {
		t.Errorf("State = %+v, want incomplete", st)
	}
	mu.Lock()
	if len(reported) != 1 || !errors.Is(reported[0], ErrCorrupt) {
		t.Errorf("OnCorruption got %v, want one ErrCorrupt", reported)
	}
	mu.Unlock()
	if f := m.file(path); !f.corrupt || !f.checked {
		t.Errorf("file metrics %+v, want corrupt and checked", f)
	}
	must(t, db.Close())

	if st, ok, err := syncstate.Read(path); err != nil || !ok || st.State != syncstate.Corrupt || !strings.Contains(st.Reason, "page") {
		t.Errorf("state file = %+v, %v, %v; want corrupt with the reason", st, ok, err)
	}
	if _, err = Open(ctx, path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open after the check found damage = %v, want ErrCorrupt", err)
	}
	moved, err := MoveAside(path)
	must(t, err)
	if _, err := os.Stat(layout.StatePath(moved)); err != nil {
		t.Errorf("the state file did not move with the file: %v", err)
	}
	db = mustOpen(t, path, Options{})
	must(t, db.Close())
}

// A file truncated under the mapping while open (SIGBUS on the pages past
// its new end): every read fails with ErrCorrupt instead of crashing the
// process, in the reading goroutine and in the decoding ones, and the
// file is recorded corrupt.
func TestTruncatedWhileOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(uncheckedDir(t), "cache.db")
	db := mustOpen(t, path, Options{HotBytes: new(int64)})
	s := openPods(t, db, namespaceIndexers())
	pods := podObjects(2000)
	must(t, s.Replace(pods, "1"))
	if _, err := db.WaitFileCheck(ctx); err != nil {
		t.Fatal(err)
	}
	must(t, os.Truncate(path, int64(4*db.bolt.Info().PageSize)))

	err := s.ScanParallel(ctx, 2, func(string, interface{}) error { return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("ScanParallel = %v, want ErrCorrupt", err)
	}
	key, _ := cache.MetaNamespaceKeyFunc(pods[len(pods)-1])
	if _, _, err := s.GetByKey(key); !errors.Is(err, ErrCorrupt) {
		t.Errorf("GetByKey = %v, want ErrCorrupt", err)
	}
	if got := s.List(); len(got) != 0 {
		t.Errorf("List handed out %d objects of a truncated file", len(got))
	}
	if res := db.FileCheck(); !errors.Is(res.Corrupt, ErrCorrupt) {
		t.Errorf("file check = %+v, want the file reported corrupt", res)
	}
	db.bg.Wait()
	must(t, db.Close())
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open after truncation = %v, want ErrCorrupt", err)
	}
}

// podObjects returns n podgen pods as Replace takes them.
func podObjects(n int) []interface{} {
	objs := make([]interface{}, n)
	for i := range objs {
		objs[i] = podgen.Pod(i)
	}
	return objs
}

// The file's corruption is told to a store's OnCorruption once, when it
// is found both by the report that reaches every registered store and by
// DB.Resource for a store registered meanwhile (the race that called it
// twice: a background check finishing while Resource opened the store).
func TestFileCorruptionToldOnce(t *testing.T) {
	db := mustOpen(t, tempPath(t), Options{})
	defer func() { _ = db.Close() }()
	var mu sync.Mutex
	var told []error
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec,
		OnCorruption: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, err)
		}})
	must(t, err)
	damage := fmt.Errorf("%w: page 7 damaged", ErrCorrupt)
	db.reportCorrupt(damage)
	s.fileCorrupted(damage) // what Resource does when it finds db.corrupt set
	db.bg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !errors.Is(told[0], ErrCorrupt) {
		t.Errorf("OnCorruption got %v, want one ErrCorrupt", told)
	}
	if st := mustState(t, s); st.Complete {
		t.Errorf("State = %+v, want incomplete", st)
	}
}

// mustOpen opens path with a test logger; the caller closes it.
func mustOpen(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, opts)
	must(t, err)
	return db
}
