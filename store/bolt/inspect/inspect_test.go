package inspect_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// recordedCodec resolves the codec p records, as the snapshot CLI does.
func recordedCodec(t testing.TB, p inspect.ResourceInfo) codec.Codec {
	t.Helper()
	c, err := byName(p.Codec)
	must(t, err)
	return c
}

// TestResourcesAndOpenRecorded checks the inspection API: Resources lists
// what the file records, and OpenRecorded reads a resource with the codec
// named in the file and its recorded indexes, without index functions.
func TestResourcesAndOpenRecorded(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync})
	must(t, err)
	pods := openPods(t, db, nodeIndexers())
	must(t, pods.Replace([]interface{}{mkPod("ns", "a", "5"), mkPod("other", "b", "6")}, "6"))
	svcID := bolt.Identity{Version: "v1", Resource: "services", Kind: "Service", Scope: store.Scope{Namespace: "ns"}}
	svcs, err := db.Resource(ctx, bolt.ResourceOptions{Identity: svcID, Codec: testkit.PodJSON{}, Cluster: "cluster-1", TransformVersion: "t2"})
	must(t, err)
	must(t, svcs.Add(mkPod("ns", "s", "9")))
	must(t, db.Close())

	db = openDB(t, path, bolt.Options{ReadOnly: true})
	infos, err := inspect.Resources(ctx, db)
	must(t, err)
	if len(infos) != 2 {
		t.Fatalf("Resources = %+v, want 2", infos)
	}
	byRes := map[string]inspect.ResourceInfo{}
	for _, in := range infos {
		byRes[in.Identity.Resource] = in
	}
	p := byRes["pods"]
	if p.Identity != podsID || p.Codec != codec.NameProtobuf || p.Schema != inspect.SchemaVersion || p.ResourceVersion != "6" ||
		p.State != inspect.StateComplete || p.Objects != 2 || !slices.Equal(p.Indexes, []string{cache.NamespaceIndex, "node"}) ||
		p.Bytes <= 0 || p.LastWrite.IsZero() || p.LastRelist.IsZero() || p.Cluster != "" || p.TransformVersion != "" {
		t.Errorf("pods info = %+v", p)
	}
	if s := byRes["services"]; s.Identity != svcID || s.Codec != "test-pod-json" || s.State != inspect.StateNew || s.Objects != 1 ||
		s.Cluster != "cluster-1" || s.TransformVersion != "t2" {
		t.Errorf("services info = %+v", s)
	}

	s, err := inspect.OpenRecorded(ctx, db, p.Identity, recordedCodec(t, p))
	must(t, err)
	if keys, err := s.IndexKeys("node", "node-1"); err != nil || !slices.Equal(keys, []string{"ns/a", "other/b"}) {
		t.Errorf("IndexKeys(node) = %q, %v", keys, err)
	}
	if vals := s.ListIndexFuncValues(cache.NamespaceIndex); !slices.Equal(vals, []string{"ns", "other"}) {
		t.Errorf("ListIndexFuncValues = %q", vals)
	}
	if got := podsOf(t, s.List()); len(got) != 2 || got["ns/a"].ResourceVersion != "5" {
		t.Errorf("List = %v", got)
	}
	if _, err := s.Index("node", mkPod("ns", "a", "5")); !errors.Is(err, inspect.ErrNoIndexFunc) {
		t.Errorf("Index on a recorded store = %v, want ErrNoIndexFunc", err)
	}
	if err := s.Add(mkPod("ns", "z", "1")); !errors.Is(err, bolt.ErrReadOnly) {
		t.Errorf("Add on a recorded store = %v, want ErrReadOnly", err)
	}
	if _, err := inspect.OpenRecorded(ctx, db, p.Identity, recordedCodec(t, p)); !errors.Is(err, bolt.ErrResourceInUse) {
		t.Errorf("second OpenRecorded = %v, want ErrResourceInUse", err)
	}
	must(t, s.Close())
	if _, err := inspect.OpenRecorded(ctx, db, p.Identity, testkit.PodJSON{}); !errors.Is(err, bolt.ErrInvalidOptions) {
		t.Errorf("OpenRecorded with another codec = %v, want ErrInvalidOptions", err)
	}
	if _, err := inspect.OpenRecorded(ctx, db, bolt.Identity{Version: "v1", Resource: "nodes"}, codec.Protobuf(nil)); !errors.Is(err, bolt.ErrResourceNotFound) {
		t.Errorf("OpenRecorded of an absent identity = %v, want ErrResourceNotFound", err)
	}
}

// TestCompactedFileKeepsBlobIDs checks that a compacted copy (CompactTo,
// the snapshot CLI's compact) keeps the blobs bucket's sequence: the copy
// takes new items without reusing the ids of those it holds, and keeps its
// source's page size: the default's, and the 4 KiB of a file created
// before it.
func TestCompactedFileKeepsBlobIDs(t *testing.T) {
	for _, ps := range []int{0, 4096} {
		t.Run(fmt.Sprintf("page size %d", ps), func(t *testing.T) { testCompactedFileKeepsBlobIDs(t, ps) })
	}
}

func testCompactedFileKeepsBlobIDs(t *testing.T, pageSize int) {
	ctx := context.Background()
	path := tempPath(t)
	dir := filepath.Dir(path)
	db := openDB(t, path, bolt.Options{Sync: bolt.UnsafeNoSync, PageSize: pageSize})
	s := openPods(t, db, nodeIndexers())
	for i := range 20 {
		must(t, s.Add(mkPod("ns", "p"+strconv.Itoa(i), strconv.Itoa(i+1))))
	}
	for i := range 10 {
		must(t, s.Delete(mkPod("ns", "p"+strconv.Itoa(2*i), "")))
	}
	out := filepath.Join(dir, "compact.db")
	if _, err := inspect.CompactTo(ctx, db, out); err != nil {
		t.Fatal(err)
	}

	if got, want := filePageSize(t, out), filePageSize(t, path); got != want {
		t.Errorf("compacted file has page size %d, its source %d", got, want)
	}
	db2 := openDB(t, out, bolt.Options{Sync: bolt.UnsafeNoSync})
	s2 := openPods(t, db2, nodeIndexers())
	for i := range 10 {
		must(t, s2.Add(mkPod("ns", "q"+strconv.Itoa(i), strconv.Itoa(100+i))))
	}
	verifyClean(t, db2)
	got := podsOf(t, s2.List())
	if len(got) != 20 {
		t.Fatalf("%d pods in the compacted file after 10 adds, want 20", len(got))
	}
	for i := range 10 {
		odd, added := "ns/p"+strconv.Itoa(2*i+1), "ns/q"+strconv.Itoa(i)
		if rv := rvOfPod(got[odd]); rv != strconv.Itoa(2*i+2) {
			t.Errorf("%s has RV %q after the adds, want %d", odd, rv, 2*i+2)
		}
		if rv := rvOfPod(got[added]); rv != strconv.Itoa(100+i) {
			t.Errorf("%s has RV %q, want %d", added, rv, 100+i)
		}
	}
}

// filePageSize reads the page size recorded in the meta page at the start
// of the bbolt file at path: a 16-byte page header, then the meta's magic,
// version and page size (uint32, little-endian on every platform the tests
// run on).
func filePageSize(t *testing.T, path string) int {
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
