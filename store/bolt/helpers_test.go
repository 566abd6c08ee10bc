package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

var podsID = Identity{Version: "v1", Resource: "pods", Kind: "Pod"}

func namespaceIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

// tempPath returns a path for a new file in a test directory; the file is
// checked when the test ends (see checkedDir).
func tempPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(checkedDir(t), "cache.db")
}

// writeThreePods writes pods ns/a, ns/b and ns/c (resourceVersions 1 to
// 3, list RV 3) with the namespace index to a new file at path, and closes
// it: the file that damage and corruption tests start from.
func writeThreePods(t testing.TB, path string) {
	t.Helper()
	db, err := Open(context.Background(), path, Options{Sync: UnsafeNoSync})
	must(t, err)
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "1"), mkPod("ns", "b", "2"), mkPod("ns", "c", "3")}, "3"))
	must(t, db.Close())
}

// openDB opens path and closes it at the end of the test.
func openDB(t testing.TB, path string, opts Options) *DB {
	t.Helper()
	if opts.Logger.GetSink() == nil {
		if tt, ok := t.(*testing.T); ok {
			opts.Logger = ktesting.NewLogger(tt, ktesting.NewConfig())
		}
	}
	db, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// podCodec is the codec the tests store pods with.
var podCodec = codec.Protobuf(nil)

// openPods opens the pods resource of db with podCodec.
func openPods(t testing.TB, db *DB, indexers cache.Indexers) *Store {
	t.Helper()
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: indexers})
	if err != nil {
		t.Fatalf("Resource: %v", err)
	}
	return s
}

// verifyClean runs the content check (inspect.Verify) and fails the test on any problem.
func verifyClean(t testing.TB, db *DB) {
	t.Helper()
	var problems []Problem
	if err := verifyDB(context.Background(), db, nil, func(p Problem) { problems = append(problems, p) }); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, p := range problems {
		t.Errorf("Verify: %v", p)
	}
}

func mkPod(ns, name, rv string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: rv,
			UID:    types.UID("uid-" + ns + "-" + name),
			Labels: map[string]string{"app": name},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "img:" + rv}}},
	}
}

func mustState(t testing.TB, s *Store) (st struct {
	RV                    string
	Complete, Interrupted bool
	Discarded             string
	Objects               int
}) {
	t.Helper()
	got, err := s.State()
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	st.RV, st.Complete, st.Interrupted, st.Discarded, st.Objects = got.ResourceVersion, got.Complete, got.RelistInterrupted, got.Discarded, got.Objects
	return st
}

var errTest = errors.New("test error")

// rawUpdate runs fn in a write transaction of the bbolt file at path, which
// must not be open: the tests use it to damage files the way a bug or a
// disk would.
func rawUpdate(t testing.TB, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("raw open: %v", err)
	}
	defer func() { _ = bdb.Close() }()
	if err := bdb.Update(fn); err != nil {
		t.Fatalf("raw update: %v", err)
	}
}

// rawLive returns the live generation of the pods resource in tx.
func rawLive(t testing.TB, tx *bbolt.Tx) (*bbolt.Bucket, *layout.Generation) {
	t.Helper()
	res := tx.Bucket([]byte(podsID.String()))
	if res == nil {
		t.Fatal("pods bucket missing")
	}
	g, err := layout.OpenLive(res)
	if err != nil {
		t.Fatal(err)
	}
	return res, g
}

// rawEnvelope returns the envelope of item key of g.
func rawEnvelope(t testing.TB, g *layout.Generation, key string) []byte {
	t.Helper()
	env, err := g.Lookup([]byte(key))
	if err != nil || env == nil {
		t.Fatalf("envelope of %q: %v (found %t)", key, err, env != nil)
	}
	return env
}

// setEnvelope replaces the envelope of item key of g, which must exist.
func setEnvelope(t testing.TB, g *layout.Generation, key string, env []byte) {
	t.Helper()
	v := g.Items.Get([]byte(key))
	if v == nil {
		t.Fatalf("no item %q", key)
	}
	id, _, err := layout.SplitItemEntry([]byte(key), v)
	must(t, err)
	must(t, g.Blobs.Put(append([]byte(nil), id...), env))
}

// appendItemEntry returns the item entry of key with blob id, raw select
// part sel and raw reverse entry rev, with a valid checksum: to write
// entries damaged the way a bug would write them.
func appendItemEntry(key string, id, sel, rev []byte) []byte {
	var dst []byte
	dst = append(dst, id...)
	dst = append(dst, sel...)
	return layout.SealItemEntry([]byte(key), append(dst, rev...))
}

// itemEntry returns the parsed item entry of key in g, which must exist.
func itemEntry(t testing.TB, g *layout.Generation, key string) layout.ItemEntry {
	t.Helper()
	e, err := layout.ParseItemEntry([]byte(key), g.Items.Get([]byte(key)))
	if err != nil {
		t.Fatalf("item entry of %q: %v", key, err)
	}
	return e
}

// putIndexEntry files key under value in index name of g, with a valid
// checksum: to write entries a bug would write.
func putIndexEntry(t testing.TB, g *layout.Generation, name, value, key string) {
	t.Helper()
	k := layout.IndexKey(value, key)
	must(t, g.Index.Bucket([]byte(name)).Put(k, layout.NewIndexSum(name).Value(k, value)))
}

// rawMeta rewrites the pods resource's meta with fn.
func rawMeta(t testing.TB, path string, fn func(m *layout.Meta)) {
	t.Helper()
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		res, _ := rawLive(t, tx)
		m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
		if err != nil {
			return err
		}
		fn(&m)
		b, err := layout.EncodeMeta(&m)
		if err != nil {
			return err
		}
		return res.Put(layout.MetaKey, b)
	})
}

// podsOf returns the pods of objs by key.
func podsOf(t testing.TB, objs []interface{}) map[string]*corev1.Pod {
	t.Helper()
	out := map[string]*corev1.Pod{}
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			t.Fatalf("got %T, want a pod", o)
		}
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}

// recordedMetas returns the meta of every resource recorded in db's file, in
// bucket-name order (what inspect.Resources reports).
func recordedMetas(t testing.TB, db *DB) []layout.Meta {
	t.Helper()
	var out []layout.Meta
	err := db.view("recorded", func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, res *bbolt.Bucket) error {
			if !layout.IsResourceBucket(name) {
				return nil
			}
			m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
			if err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
	})
	if err != nil {
		t.Fatalf("recorded resources: %v", err)
	}
	return out
}
