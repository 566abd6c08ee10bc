package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

func nodeIndexers() cache.Indexers {
	ix := namespaceIndexers()
	ix["node"] = func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}
	return ix
}

// TestPersistence checks that items, indexes, the RV and the state survive
// closing and reopening the file.
func TestPersistence(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := openPods(t, db, nodeIndexers())
	var list []interface{}
	for i := range 30 {
		list = append(list, mkPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%02d", i), "10"))
	}
	if err := s.Replace(list, "10"); err != nil {
		t.Fatal(err)
	}
	moved := mkPod("ns-0", "p-00", "11")
	moved.Spec.NodeName = "node-2"
	if err := s.Apply(ctx, []cache.Transaction{
		{Type: cache.TransactionTypeUpdate, Object: moved},
		{Type: cache.TransactionTypeDelete, Object: mkPod("ns-1", "p-01", "12")},
	}, "12"); err != nil {
		t.Fatal(err)
	}
	s.Bookmark("15")
	want := podsOf(t, s.List())
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, path, Options{})
	s = openPods(t, db, nodeIndexers())
	st := mustState(t, s)
	if st.RV != "15" || !st.Complete || st.Objects != 29 || st.Interrupted || st.Discarded != "" {
		t.Errorf("state after reopen = %+v, want RV 15, complete, 29 objects", st)
	}
	got := podsOf(t, s.List())
	if len(got) != len(want) {
		t.Fatalf("reopened store holds %d objects, want %d", len(got), len(want))
	}
	for k, p := range want {
		if !apiequality.Semantic.DeepEqual(got[k], p) {
			t.Errorf("object %s differs after reopen", k)
		}
	}
	keys, err := s.IndexKeys("node", "node-2")
	if err != nil || !slices.Equal(keys, []string{"ns-0/p-00"}) {
		t.Errorf("IndexKeys(node, node-2) = %q, %v; want [ns-0/p-00]", keys, err)
	}
	if keys, _ := s.IndexKeys(cache.NamespaceIndex, "ns-1"); len(keys) != 9 || slices.Contains(keys, "ns-1/p-01") {
		t.Errorf("IndexKeys(namespace, ns-1) = %q, want 9 keys without the deleted one", keys)
	}
	verifyClean(t, db)
}

// TestIdentityIsolation checks that identities differing in any one field
// never share data (invariant 3).
func TestIdentityIsolation(t *testing.T) {
	base := Identity{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment",
		Scope: store.Scope{Namespace: "ns", LabelSelector: "a=b", FieldSelector: "metadata.name=x", Shard: "0"}}
	variants := map[string]func(*Identity){
		"Group":         func(id *Identity) { id.Group = "extensions" },
		"Version":       func(id *Identity) { id.Version = "v2" },
		"Resource":      func(id *Identity) { id.Resource = "replicasets" },
		"Kind":          func(id *Identity) { id.Kind = "ReplicaSet" },
		"Namespace":     func(id *Identity) { id.Namespace = "other" },
		"LabelSelector": func(id *Identity) { id.LabelSelector = "a=c" },
		"FieldSelector": func(id *Identity) { id.FieldSelector = "metadata.name=y" },
		"Shard":         func(id *Identity) { id.Shard = "1" },
		// Escaping keeps a separator inside a value from forging
		// another identity.
		"Separators": func(id *Identity) { id.Namespace = "ns;l=a=b"; id.LabelSelector = "" },
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
			a, err := db.Resource(context.Background(), ResourceOptions{Identity: base, Codec: podCodec})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Add(mkPod("ns", "x", "1")); err != nil {
				t.Fatal(err)
			}
			other := base
			change(&other)
			b, err := db.Resource(context.Background(), ResourceOptions{Identity: other, Codec: podCodec})
			if err != nil {
				t.Fatal(err)
			}
			if keys := b.ListKeys(); len(keys) != 0 {
				t.Errorf("identity %s sees %q written under %s", other, keys, base)
			}
			if a.Identity().String() == b.Identity().String() {
				t.Errorf("identities %+v and %+v share the bucket name %q", base, other, a.Identity())
			}
		})
	}
}

// TestLabelSelectorCanonical checks that equivalent label selectors share
// data and that an invalid one is refused.
func TestLabelSelectorCanonical(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	ctx := context.Background()
	a, err := db.Resource(ctx, ResourceOptions{Identity: Identity{Version: "v1", Resource: "pods", Scope: store.Scope{LabelSelector: "b=2, a=1"}}, Codec: podCodec})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Add(mkPod("ns", "x", "1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := db.Resource(ctx, ResourceOptions{Identity: Identity{Version: "v1", Resource: "pods", Scope: store.Scope{LabelSelector: "a=1,b=2"}}, Codec: podCodec})
	if err != nil {
		t.Fatal(err)
	}
	if keys := b.ListKeys(); !slices.Equal(keys, []string{"ns/x"}) {
		t.Errorf("equivalent selector sees %q, want [ns/x]", keys)
	}
	for _, id := range []Identity{
		{Version: "v1", Resource: "pods", Scope: store.Scope{LabelSelector: "a=(1"}},
		{Version: "v1", Resource: "pods", Scope: store.Scope{FieldSelector: "a"}},
		{Resource: "pods"},
		{Version: "v1"},
	} {
		if _, err := db.Resource(ctx, ResourceOptions{Identity: id, Codec: podCodec}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Resource(%+v) = %v, want ErrInvalidOptions", id, err)
		}
	}
}

// TestMismatchDiscards checks that recorded data that does not match the
// opening store is discarded with a reason, never misread.
func TestMismatchDiscards(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		opts   func(o *ResourceOptions)
		reason string
	}{
		{name: "codec", opts: func(o *ResourceOptions) { o.Codec = testkit.PodJSON{} }, reason: "codec"},
		{name: "schema", damage: func(t *testing.T, path string) {
			rawMeta(t, path, func(m *layout.Meta) { m.Schema = layout.SchemaVersion + 1 })
		}, reason: "schema version"},
		{name: "identity", damage: func(t *testing.T, path string) {
			rawMeta(t, path, func(m *layout.Meta) { m.Identity.Kind = "Other" })
		}, reason: "identity"},
		{name: "type fingerprint of an older binary", damage: func(t *testing.T, path string) {
			rawMeta(t, path, func(m *layout.Meta) { m.TypeHash = "sha256:older" })
		}, reason: "type fingerprint"},
		{name: "no type fingerprint recorded", damage: func(t *testing.T, path string) {
			rawMeta(t, path, func(m *layout.Meta) { m.TypeHash = "" })
		}, reason: "type fingerprint"},
		{name: "transform version changed", opts: func(o *ResourceOptions) { o.TransformVersion = "strip-managed-fields" }, reason: `transform version "" recorded, want "strip-managed-fields"`},
		{name: "another cluster", opts: func(o *ResourceOptions) { o.Cluster = "uid-2" }, reason: `cluster "" recorded, now connected to cluster "uid-2"`},
		{name: "schema 4 without cluster or transform", damage: func(t *testing.T, path string) {
			rawMeta(t, path, func(m *layout.Meta) { m.Schema = 4 })
		}, reason: "schema version 4 recorded"},
		{name: "type gained a field", opts: func(o *ResourceOptions) { o.Prototype = &podWithNewField{} }, reason: "type fingerprint"},
		{name: "unreadable meta", damage: func(t *testing.T, path string) {
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				return tx.Bucket([]byte(podsID.String())).Put(layout.MetaKey, []byte{0xc1})
			})
		}, reason: "metadata unreadable"},
		{name: "schema 1 layout", damage: func(t *testing.T, path string) {
			rawMeta(t, path, func(m *layout.Meta) { m.Schema = 1 })
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				_, g := rawLive(t, tx)
				if err := g.B.DeleteBucket(layout.BlobsBucket); err != nil {
					return err
				}
				_, err := g.B.CreateBucket([]byte("reverse"))
				return err
			})
		}, reason: "schema version 1 recorded"},
		{name: "envelope sequence behind", damage: func(t *testing.T, path string) {
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				_, g := rawLive(t, tx)
				return g.Blobs.SetSequence(0)
			})
		}, reason: "envelope sequence 0 is below"},
		{name: "live generation missing", damage: func(t *testing.T, path string) {
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				return tx.Bucket([]byte(podsID.String())).Put(layout.LiveKey, layout.LiveValue(99))
			})
		}, reason: "live data unreadable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t)
			db, err := Open(context.Background(), path, Options{Sync: UnsafeNoSync})
			if err != nil {
				t.Fatal(err)
			}
			s := openPods(t, db, namespaceIndexers())
			if err := s.Replace([]interface{}{mkPod("ns", "a", "5")}, "5"); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.damage != nil {
				tc.damage(t, path)
			}
			opts := ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			db = openDB(t, path, Options{Sync: UnsafeNoSync})
			s, err = db.Resource(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			st := mustState(t, s)
			if !strings.Contains(st.Discarded, tc.reason) || st.RV != "" || st.Complete || st.Objects != 0 {
				t.Errorf("state = %+v, want discarded for %q, empty", st, tc.reason)
			}
			if keys := s.ListKeys(); len(keys) != 0 {
				t.Errorf("keys after discard = %q", keys)
			}
			verifyClean(t, db)
		})
	}
}

// TestIndexChangeRebuilds checks that a different index set or IndexVersion
// rebuilds the index entries from the items instead of discarding them.
func TestIndexChangeRebuilds(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	// The "zone" index changes meaning between versions 1 and 2.
	zone := func(version string) cache.Indexers {
		return cache.Indexers{"zone": func(obj interface{}) ([]string, error) {
			return []string{version + "-" + obj.(*corev1.Pod).Namespace}, nil
		}}
	}
	open := func(indexers cache.Indexers, version string) (*DB, *Store) {
		db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
		if err != nil {
			t.Fatal(err)
		}
		s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: indexers, IndexVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		return db, s
	}
	db, s := open(namespaceIndexers(), "")
	for i := range 2500 { // more than one rebuild chunk
		if i%500 == 0 {
			var batch []cache.Transaction
			for j := i; j < i+500; j++ {
				batch = append(batch, cache.Transaction{Type: cache.TransactionTypeAdd, Object: mkPod(fmt.Sprintf("ns-%d", j%4), fmt.Sprintf("p-%04d", j), "1")})
			}
			if err := s.Apply(ctx, batch, "1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = db.Close()

	steps := []struct {
		name     string
		indexers cache.Indexers
		version  string
		index    string
		value    string
		stale    bool // the recorded entries are not what the function gives
	}{
		{"added index", zone("1"), "1", "zone", "1-ns-2", false},
		// Without a version bump the entries are kept, and Verify
		// reports them stale: that is what IndexVersion is for.
		{"same version keeps entries", zone("2"), "1", "zone", "1-ns-2", true},
		{"new version rebuilds", zone("2"), "2", "zone", "2-ns-2", false},
		{"back to namespace", namespaceIndexers(), "", cache.NamespaceIndex, "ns-2", false},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			db, s := open(step.indexers, step.version)
			defer func() { _ = db.Close() }()
			st := mustState(t, s)
			if st.Discarded != "" || st.Objects != 2500 {
				t.Errorf("state = %+v, want 2500 objects kept", st)
			}
			keys, err := s.IndexKeys(step.index, step.value)
			if err != nil || len(keys) != 625 {
				t.Errorf("IndexKeys(%s, %s) = %d keys, %v; want 625", step.index, step.value, len(keys), err)
			}
			if !step.stale {
				verifyClean(t, db)
				return
			}
			stale := 0
			if err := verifyDB(ctx, db, nil, func(p Problem) {
				if p.Kind == ProblemIndexValues {
					stale++
				}
			}); err != nil || stale != 2500 {
				t.Errorf("Verify found %d stale index values (%v), want 2500", stale, err)
			}
		})
	}

	t.Run("interrupted rebuild", func(t *testing.T) {
		rawMeta(t, path, func(m *layout.Meta) { m.IndexBuild = true })
		rawUpdate(t, path, func(tx *bbolt.Tx) error {
			_, g := rawLive(t, tx)
			return g.Index.Bucket([]byte(cache.NamespaceIndex)).Delete(layout.IndexKey("ns-2", "ns-2/p-0002"))
		})
		db, s := open(namespaceIndexers(), "")
		defer func() { _ = db.Close() }()
		if keys, _ := s.IndexKeys(cache.NamespaceIndex, "ns-2"); len(keys) != 625 {
			t.Errorf("after an interrupted rebuild IndexKeys = %d keys, want 625", len(keys))
		}
		verifyClean(t, db)
	})
}

// TestInterruptedReplace checks invariant 2 at the store level: a file
// copied in the middle of a Replace (as a crash would leave it) opens with
// the previous content and RV, complete, and reports the interruption.
func TestInterruptedReplace(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, tempPath(t), Options{})
	s := openPods(t, db, namespaceIndexers())
	if err := s.Replace([]interface{}{mkPod("ns", "old-1", "3"), mkPod("ns", "old-2", "4")}, "4"); err != nil {
		t.Fatal(err)
	}
	r, err := s.BeginReplace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(ctx, mkPod("ns", "new-1", "9"), mkPod("other", "new-2", "9")); err != nil {
		t.Fatal(err)
	}
	var snapshot bytes.Buffer
	if _, err := db.Backup(ctx, &snapshot); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, "9"); err != nil {
		t.Fatal(err)
	}

	crashed := tempPath(t)
	if err := os.WriteFile(crashed, snapshot.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	db2 := openDB(t, crashed, Options{})
	s2 := openPods(t, db2, namespaceIndexers())
	st := mustState(t, s2)
	if !st.Interrupted || st.RV != "4" || !st.Complete || st.Objects != 2 {
		t.Errorf("state = %+v, want interrupted, RV 4, complete, 2 objects", st)
	}
	if keys := s2.ListKeys(); !slices.Equal(keys, []string{"ns/old-1", "ns/old-2"}) {
		t.Errorf("keys = %q, want the previous content", keys)
	}
	if keys, _ := s2.IndexKeys(cache.NamespaceIndex, "other"); len(keys) != 0 {
		t.Errorf("staged index entries leaked: %q", keys)
	}
	verifyClean(t, db2)
	// The staged generation is gone from the file.
	if infos := recordedMetas(t, db2); len(infos) != 1 || infos[0].State != layout.StateComplete || infos[0].Staging != 0 {
		t.Errorf("recorded resources = %+v; want one complete resource, nothing staged", infos)
	}
	// A committed Replace clears the flag.
	if err := s2.Replace([]interface{}{mkPod("ns", "x", "20")}, "20"); err != nil {
		t.Fatal(err)
	}
	if st := mustState(t, s2); st.Interrupted {
		t.Errorf("RelistInterrupted still set after a committed Replace")
	}
}

// TestRecordedVersionsKeep checks that reopening with the same Cluster and
// TransformVersion keeps the data, and that changing either discards it.
func TestRecordedVersionsKeep(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	open := func(cluster, transform string) (*DB, *Store) {
		db := openDB(t, path, Options{Sync: UnsafeNoSync})
		s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Cluster: cluster, TransformVersion: transform})
		if err != nil {
			t.Fatal(err)
		}
		return db, s
	}
	db, s := open("uid-1", "v1")
	if err := s.Replace([]interface{}{mkPod("ns", "a", "5")}, "5"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	steps := []struct {
		cluster, transform string
		reason             string // "" when the data is kept
	}{
		{"uid-1", "v1", ""},
		{"uid-1", "v2", `transform version "v1" recorded, want "v2"`},
		{"uid-1", "v2", ""},
		{"uid-2", "v2", `cluster "uid-1" recorded, now connected to cluster "uid-2"`},
	}
	for i, step := range steps {
		db, s := open(step.cluster, step.transform)
		st := mustState(t, s)
		if step.reason == "" {
			if st.Discarded != "" || st.RV != "5" || st.Objects != 1 {
				t.Errorf("step %d: state = %+v, want kept at RV 5 with 1 object", i, st)
			}
		} else if !strings.Contains(st.Discarded, step.reason) || st.Objects != 0 || len(s.ListKeys()) != 0 {
			t.Errorf("step %d: state = %+v, want discarded for %q, empty", i, st, step.reason)
		}
		if st.Objects == 0 {
			if err := s.Replace([]interface{}{mkPod("ns", "a", "5")}, "5"); err != nil {
				t.Fatal(err)
			}
		}
		verifyClean(t, db)
		_ = db.Close()
	}
}
