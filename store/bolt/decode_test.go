package bolt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// TestBulkReadsSkipCorruptAcrossChunks checks List, ByIndex and Index,
// which decode chunks on every core: the results are in key order across
// chunk boundaries, an object that does not decode in the middle of a
// chunk is skipped (the others of its chunk are kept), and each read
// reports it once and marks the resource incomplete.
func TestBulkReadsSkipCorruptAcrossChunks(t *testing.T) {
	const pods = 3*scanChunk + 17
	bad := fmt.Sprintf("ns/p%04d", scanChunk+5)
	ctx := context.Background()
	path := damagedPath(t)
	db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
	must(t, err)
	s := openPods(t, db, namespaceIndexers())
	list := make([]interface{}, pods)
	var want []string
	for i := range list {
		list[i] = mkPod("ns", fmt.Sprintf("p%04d", i), "1")
		if key := fmt.Sprintf("ns/p%04d", i); key != bad {
			want = append(want, key)
		}
	}
	must(t, s.Replace(list, "1"))
	must(t, db.Close())
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		_, g := rawLive(t, tx)
		setEnvelope(t, g, bad, layout.EncodeEnvelope(bad, "1", "", []byte("not protobuf")))
		return nil
	})
	db = openDB(t, path, Options{Sync: UnsafeNoSync})
	var reported []error
	s, err = db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers(),
		OnCorruption: func(err error) { reported = append(reported, err) }})
	must(t, err)
	reads := []struct {
		name string
		read func() ([]interface{}, error)
	}{
		{"List", func() ([]interface{}, error) { return s.List(), nil }},
		{"ByIndex", func() ([]interface{}, error) { return s.ByIndex(cache.NamespaceIndex, "ns") }},
		{"Index", func() ([]interface{}, error) { return s.Index(cache.NamespaceIndex, mkPod("ns", "x", "1")) }},
	}
	for _, r := range reads {
		reported = nil
		objs, err := r.read()
		must(t, err)
		var got []string
		for _, o := range objs {
			p := o.(*corev1.Pod)
			got = append(got, p.Namespace+"/"+p.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s returned %d objects, want the %d others in key order", r.name, len(got), len(want))
		}
		if len(reported) != 1 || !errors.Is(reported[0], ErrCorrupt) {
			t.Errorf("%s reported %v, want one ErrCorrupt", r.name, reported)
		}
	}
	if st := mustState(t, s); st.Complete {
		t.Errorf("state = %+v, want incomplete", st)
	}
}

// TestScansHoldBoundedChunks checks that a streaming read decodes ahead of
// its function by a bounded number of chunks: Scan and Select one,
// ScanParallel three (delivered, ready, being decoded), whatever the size
// of the store.
func TestScansHoldBoundedChunks(t *testing.T) {
	const pods = 12 * scanChunk
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	c := &countingCodec{Codec: podCodec}
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c, HotBytes: ptrTo[int64](0)})
	must(t, err)
	list := make([]interface{}, pods)
	for i := range list {
		list[i] = mkPod("ns", fmt.Sprintf("p%04d", i), "1")
	}
	must(t, s.Replace(list, "1"))
	ctx := context.Background()
	for _, sc := range []struct {
		name   string
		chunks int64
		scan   func(fn func(string, interface{}) error) error
	}{
		{"Scan", 1, func(fn func(string, interface{}) error) error { return s.Scan(ctx, fn) }},
		{"ScanParallel", 3, func(fn func(string, interface{}) error) error { return s.ScanParallel(ctx, 2, fn) }},
	} {
		c.decoded.Store(0)
		calls, ahead := int64(0), int64(0)
		err := sc.scan(func(string, interface{}) error {
			calls++
			ahead = max(ahead, c.decoded.Load()-calls)
			return nil
		})
		must(t, err)
		if calls != pods {
			t.Errorf("%s: %d calls, want %d", sc.name, calls, pods)
		}
		if ahead >= sc.chunks*scanChunk {
			t.Errorf("%s decoded %d objects ahead of its function, want fewer than %d chunks of %d", sc.name, ahead, sc.chunks, scanChunk)
		}
	}
}
