package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt/internal/filelock"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// TestLocked checks that a second read-write Open of a file waits at most
// Timeout and fails with ErrLocked (flock locks belong to the open file
// description, so two opens in one process exclude each other as two
// processes do), that read-only opens share the file and do not keep a
// writer out, and that the lock is released by Close.
func TestLocked(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	short := Options{Timeout: 20 * time.Millisecond}
	if _, err := Open(ctx, path, short); !errors.Is(err, ErrLocked) {
		t.Errorf("second read-write Open = %v, want ErrLocked", err)
	}
	ro := short
	ro.ReadOnly = true
	if _, err := Open(ctx, path, ro); !errors.Is(err, ErrLocked) {
		t.Errorf("read-only Open beside a read-write one = %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r1 := openDB(t, path, ro)
	r2 := openDB(t, path, ro)
	// Readers never make a writer wait (see lock.go): it writes a copy.
	w, err := Open(ctx, path, short)
	if err != nil {
		t.Errorf("read-write Open beside read-only ones = %v, want it open", err)
	} else if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_ = r1.Close()
	_ = r2.Close()
	db = openDB(t, path, short) // the lock was released
	_ = db
}

// TestOpenRejects checks that files that are not sound warmcache files are
// refused with a clear error and never crash the process.
func TestOpenRejects(t *testing.T) {
	sound := func(t *testing.T) string {
		path := damagedPath(t)
		db, err := Open(context.Background(), path, Options{Sync: UnsafeNoSync})
		if err != nil {
			t.Fatal(err)
		}
		s := openPods(t, db, namespaceIndexers())
		if err := s.Replace([]interface{}{mkPod("ns", "a", "1")}, "1"); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name string
		make func(t *testing.T) string
		want error
		text string
	}{
		{"garbage", func(t *testing.T) string {
			path := damagedPath(t)
			if err := os.WriteFile(path, []byte(strings.Repeat("not a bbolt file ", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}, ErrCorrupt, ""},
		{"truncated", func(t *testing.T) string {
			path := sound(t)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			return path
		}, ErrCorrupt, ""},
		{"short", func(t *testing.T) string {
			path := damagedPath(t)
			if err := os.WriteFile(path, []byte{1, 2, 3}, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}, ErrCorrupt, ""},
		{"foreign bbolt file", func(t *testing.T) string {
			path := damagedPath(t)
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				_, err := tx.CreateBucket([]byte("someone-elses"))
				return err
			})
			return path
		}, ErrCorrupt, "not a warmcache file"},
		{"wrong magic", func(t *testing.T) string {
			path := sound(t)
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				v, _ := msgpack.Marshal(&layout.FileFormat{Magic: "other", Version: 1})
				return tx.Bucket(layout.MarkerBucket).Put(layout.FormatKey, v)
			})
			return path
		}, ErrCorrupt, "magic"},
		{"newer format", func(t *testing.T) string {
			path := sound(t)
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				v, _ := msgpack.Marshal(&layout.FileFormat{Magic: layout.Magic, Version: layout.FormatVersion + 1})
				return tx.Bucket(layout.MarkerBucket).Put(layout.FormatKey, v)
			})
			return path
		}, ErrUnsupportedVersion, "newer than supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.make(t)
			for _, ro := range []bool{false, true} {
				db, err := Open(context.Background(), path, Options{ReadOnly: ro})
				if err == nil {
					_ = db.Close()
					t.Fatalf("Open(read-only %v) succeeded", ro)
				}
				if !errors.Is(err, tc.want) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.text) {
					t.Errorf("Open(read-only %v) = %v, want %v (and ErrCorrupt) mentioning %q", ro, err, tc.want, tc.text)
				}
			}
		})
	}
	t.Run("version error", func(t *testing.T) {
		path := tests[len(tests)-1].make(t)
		_, err := Open(context.Background(), path, Options{})
		var ve *VersionError
		if !errors.As(err, &ve) || ve.Found != layout.FormatVersion+1 || ve.Supported != layout.FormatVersion {
			t.Errorf("Open = %v, want a *VersionError found %d supported %d", err, layout.FormatVersion+1, layout.FormatVersion)
		}
	})
}

// TestOpenEmptyBolt checks that an empty bbolt file (no buckets) is adopted
// and that a missing file opened read-only is reported as missing.
func TestOpenEmptyBolt(t *testing.T) {
	path := tempPath(t)
	rawUpdate(t, path, func(*bbolt.Tx) error { return nil })
	db := openDB(t, path, Options{})
	if infos := recordedMetas(t, db); len(infos) != 0 {
		t.Errorf("recorded resources = %v; want none", infos)
	}
	if _, err := Open(context.Background(), tempPath(t), Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open of a missing file = %v, want fs.ErrNotExist", err)
	}
}

// TestOpenOptions checks option validation.
func TestOpenOptions(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string]Options{
		"negative timeout": {Timeout: -time.Second},
		"unknown sync":     {Sync: SyncPolicy(42)},
		"page size 3000":   {PageSize: 3000},
		"page size 256":    {PageSize: 256},
		"page size 128K":   {PageSize: 128 << 10},
		"page size -4096":  {PageSize: -4096},
	} {
		if _, err := Open(ctx, tempPath(t), opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: Open = %v, want ErrInvalidOptions", name, err)
		}
	}
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	for name, opts := range map[string]ResourceOptions{
		"no codec":      {Identity: podsID},
		"nil indexfunc": {Identity: podsID, Codec: podCodec, Indexers: cache.Indexers{"x": nil}},
	} {
		if _, err := db.Resource(ctx, opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: Resource = %v, want ErrInvalidOptions", name, err)
		}
	}
	s := openPods(t, db, nil)
	if _, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec}); !errors.Is(err, ErrResourceInUse) {
		t.Errorf("second Resource = %v, want ErrResourceInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec}); err != nil {
		t.Errorf("Resource after Close = %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec}); !errors.Is(err, ErrClosed) {
		t.Errorf("Resource after DB.Close = %v, want ErrClosed", err)
	}
	if _, err := s.State(); !errors.Is(err, ErrClosed) {
		t.Errorf("State of a store of a closed DB = %v, want ErrClosed", err)
	}
}

// filePageSize reads the page size recorded in the meta page at the start
// of the bbolt file at path: a 16-byte page header, then the meta's magic,
// version and page size (uint32, native byte order, little-endian on every
// platform the tests run on).
func filePageSize(t testing.TB, path string) int {
	t.Helper()
	b := make([]byte, 28)
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatalf("read meta of %s: %v", path, err)
	}
	return int(binary.LittleEndian.Uint32(b[24:]))
}

// TestPageSize checks that Options.PageSize sets the page size of a file
// Open creates, and that an existing file keeps its page size whatever the
// option says when it is opened again, with its data readable, writable and
// passing the file check and Verify.
func TestPageSize(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ create, reopen, want int }{
		{0, 4096, DefaultPageSize},
		{4096, 0, 4096},
		{MinPageSize, 0, MinPageSize},
		{8192, 4096, 8192},
		{16384, 0, 16384},
		{16384, 8192, 16384},
		{MaxPageSize, 16384, MaxPageSize},
	} {
		t.Run(fmt.Sprintf("create %d reopen %d", tc.create, tc.reopen), func(t *testing.T) {
			path := tempPath(t)
			db, err := Open(ctx, path, Options{Sync: UnsafeNoSync, PageSize: tc.create})
			must(t, err)
			if got := db.bolt.Info().PageSize; got != tc.want {
				t.Errorf("created with PageSize %d: bbolt page size %d, want %d", tc.create, got, tc.want)
			}
			if got := db.PageSize(); got != tc.want {
				t.Errorf("created with PageSize %d: DB.PageSize() = %d, want %d", tc.create, got, tc.want)
			}
			s := openPods(t, db, namespaceIndexers())
			var pods []interface{}
			for i := 0; i < 200; i++ {
				pods = append(pods, mkPod(fmt.Sprintf("ns%d", i%7), fmt.Sprintf("p%03d", i), strconv.Itoa(i+1)))
			}
			must(t, s.Replace(pods, "200"))
			must(t, db.Close())
			if got := db.PageSize(); got != tc.want {
				t.Errorf("created with PageSize %d: DB.PageSize() = %d after Close, want %d", tc.create, got, tc.want)
			}
			if got := filePageSize(t, path); got != tc.want {
				t.Fatalf("file created with PageSize %d has page size %d, want %d", tc.create, got, tc.want)
			}

			db = openDB(t, path, Options{Sync: UnsafeNoSync, PageSize: tc.reopen, CheckAtOpen: true})
			if got := db.bolt.Info().PageSize; got != tc.want {
				t.Errorf("reopened with PageSize %d: bbolt page size %d, want the file's %d", tc.reopen, got, tc.want)
			}
			if got := db.PageSize(); got != tc.want {
				t.Errorf("reopened with PageSize %d: DB.PageSize() = %d, want the file's %d", tc.reopen, got, tc.want)
			}
			s = openPods(t, db, namespaceIndexers())
			if keys := s.ListKeys(); len(keys) != len(pods) {
				t.Errorf("reopened: %d keys, want %d", len(keys), len(pods))
			}
			objs, err := s.ByIndex(cache.NamespaceIndex, "ns3")
			must(t, err)
			if want := len(pods) / 7; len(objs) != want && len(objs) != want+1 {
				t.Errorf("reopened: ByIndex(ns3) = %d objects, want about %d", len(objs), want)
			}
			for _, o := range pods {
				p := o.(*corev1.Pod)
				got, ok, err := s.GetByKey(p.Namespace + "/" + p.Name)
				if err != nil || !ok || got.(*corev1.Pod).ResourceVersion != p.ResourceVersion {
					t.Fatalf("GetByKey(%s/%s) = %v, %v, %v", p.Namespace, p.Name, got, ok, err)
				}
			}
			must(t, s.Add(mkPod("ns", "new", "201")))
			if res, err := db.WaitFileCheck(ctx); err != nil || res.Err != nil {
				t.Errorf("file check: %v, %v", err, res.Err)
			}
			verifyClean(t, db)
			if got := filePageSize(t, path); got != tc.want {
				t.Errorf("after reopening with PageSize %d, the file's page size is %d, want %d", tc.reopen, got, tc.want)
			}
		})
	}
}

// TestReadOnlyDB checks that a read-only DB serves recorded data and
// refuses every write and every repair with ErrReadOnly.
func TestReadOnlyDB(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	s := openPods(t, db, namespaceIndexers())
	if err := s.Replace([]interface{}{mkPod("ns", "a", "7")}, "7"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ro := openDB(t, path, Options{ReadOnly: true})
	s = openPods(t, ro, namespaceIndexers())
	if st := mustState(t, s); st.RV != "7" || !st.Complete || st.Objects != 1 {
		t.Errorf("read-only state = %+v", st)
	}
	if keys, err := s.IndexKeys("namespace", "ns"); err != nil || len(keys) != 1 {
		t.Errorf("IndexKeys = %q, %v", keys, err)
	}
	for name, err := range map[string]error{
		"Add":    s.Add(mkPod("ns", "b", "8")),
		"Delete": s.Delete(mkPod("ns", "a", "8")),
		"Apply":  s.Apply(ctx, nil, "9"),
		"Replace": func() error {
			_, err := s.BeginReplace(ctx)
			return err
		}(),
		"AddIndexers": s.AddIndexers(nodeIndexers()),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only DB = %v, want ErrReadOnly", name, err)
		}
	}
	s.Bookmark("10") // logged, not recorded
	if rv := s.LastStoreSyncResourceVersion(); rv != "7" {
		t.Errorf("RV after a refused bookmark = %q, want 7", rv)
	}
	other := ResourceOptions{Identity: Identity{Version: "v1", Resource: "services"}, Codec: podCodec}
	if _, err := ro.Resource(ctx, other); !errors.Is(err, ErrReadOnly) || !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("Resource of an absent identity on a read-only DB = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Resource(ctx, ResourceOptions{Identity: podsID, Codec: testkit.PodJSON{}}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Resource with another codec on a read-only DB = %v, want ErrReadOnly", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("a read-only DB changed the file")
	}
}

// TestOpenRefusesDirectory checks that a directory given for the file is
// refused as an invalid option, not reported corrupt (which callers answer
// with MoveAside), and that MoveAside refuses it too, leaving it where it
// is.
func TestOpenRefusesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{false, true} {
		db, err := Open(context.Background(), dir, Options{ReadOnly: readOnly})
		if err == nil {
			db.Close()
			t.Fatalf("Open(directory, ReadOnly %v) succeeded", readOnly)
		}
		if !errors.Is(err, ErrInvalidOptions) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("Open(directory, ReadOnly %v): %v; want ErrInvalidOptions naming a directory, not ErrCorrupt", readOnly, err)
		}
	}
	if moved, err := MoveAside(dir); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("MoveAside(directory): %q, %v; want ErrInvalidOptions", moved, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the directory after Open and MoveAside: %v, %v; want it where it was", fi, err)
	}
	if _, err := os.Stat(dir + filelock.Suffix); err == nil {
		t.Fatalf("Open of a directory left a lock file beside it")
	}
}
