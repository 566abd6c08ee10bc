package bolt

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/codec"
)

// TestResourcesAndOpenRecorded checks the inspection API: Resources lists
// what the file records, and OpenRecorded reads a resource with the codec
// named in the file and its recorded indexes, without index functions.
func TestResourcesAndOpenRecorded(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
	must(t, err)
	pods := openPods(t, db, nodeIndexers())
	must(t, pods.Replace([]interface{}{mkPod("ns", "a", "5"), mkPod("other", "b", "6")}, "6"))
	svcID := Identity{Version: "v1", Resource: "services", Kind: "Service", Namespace: "ns"}
	svcs, err := db.Resource(ctx, ResourceOptions{Identity: svcID, Codec: podJSON{}})
	must(t, err)
	must(t, svcs.Add(mkPod("ns", "s", "9")))
	must(t, db.Close())

	db = openDB(t, path, Options{ReadOnly: true, Codecs: func(name string) (codec.Codec, error) {
		return codec.ByName(nil, name)
	}})
	infos, err := db.Resources(ctx)
	must(t, err)
	if len(infos) != 2 {
		t.Fatalf("Resources = %+v, want 2", infos)
	}
	byRes := map[string]ResourceInfo{}
	for _, in := range infos {
		byRes[in.Identity.Resource] = in
	}
	p := byRes["pods"]
	if p.Identity != podsID || p.Codec != codec.NameProtobuf || p.Schema != schemaVersion || p.ResourceVersion != "6" ||
		p.State != StateComplete || p.Objects != 2 || !slices.Equal(p.Indexes, []string{cache.NamespaceIndex, "node"}) ||
		p.Bytes <= 0 || p.LastWrite.IsZero() || p.LastRelist.IsZero() {
		t.Errorf("pods info = %+v", p)
	}
	if s := byRes["services"]; s.Identity != svcID || s.Codec != "test-pod-json" || s.State != StateNew || s.Objects != 1 {
		t.Errorf("services info = %+v", s)
	}

	s, err := db.OpenRecorded(ctx, p.Identity, nil)
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
	if _, err := s.Index("node", mkPod("ns", "a", "5")); !errors.Is(err, ErrNoIndexFunc) {
		t.Errorf("Index on a recorded store = %v, want ErrNoIndexFunc", err)
	}
	if err := s.Add(mkPod("ns", "z", "1")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Add on a recorded store = %v, want ErrReadOnly", err)
	}
	if _, err := db.OpenRecorded(ctx, p.Identity, nil); !errors.Is(err, ErrResourceInUse) {
		t.Errorf("second OpenRecorded = %v, want ErrResourceInUse", err)
	}
	must(t, s.Close())
	if _, err := db.OpenRecorded(ctx, p.Identity, podJSON{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("OpenRecorded with another codec = %v, want ErrInvalidOptions", err)
	}
	if _, err := db.OpenRecorded(ctx, Identity{Version: "v1", Resource: "nodes"}, nil); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("OpenRecorded of an absent identity = %v, want ErrResourceNotFound", err)
	}
}
