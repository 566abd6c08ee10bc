package inspect_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

var podsID = bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"}

func nodeIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node": func(obj interface{}) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		},
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tempPath returns a path for a new file in a test directory. As in package
// bolt's tests, every file of the directory is checked when the test ends,
// after the test's own cleanups closed its DBs: CheckFile and Verify must
// find no problem.
func tempPath(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Errorf("end-of-test check: %v", err)
			return
		}
		for _, e := range entries {
			if e.Type().IsRegular() && filepath.Ext(e.Name()) == ".db" {
				checkFile(t, filepath.Join(dir, e.Name()))
			}
		}
	})
	return filepath.Join(dir, "cache.db")
}

// checkFile fails t on any problem CheckFile or Verify finds in the file
// at path.
func checkFile(t testing.TB, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true, UnsafeIgnoreState: true})
	if err != nil {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), err)
		return
	}
	defer func() { _ = db.Close() }()
	if err := inspect.CheckFile(ctx, path); err != nil {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), err)
		return
	}
	if pages, _, err := inspect.MetaPages(path); err != nil || !pages[0].Valid || !pages[1].Valid {
		t.Errorf("end-of-test check of %s: meta pages %+v, %v", filepath.Base(path), pages, err)
	}
	resolve := func(name string) (codec.Codec, error) {
		if name == testkit.PodJSONName {
			return testkit.PodJSON{}, nil
		}
		return byName(name)
	}
	err = inspect.Verify(ctx, db, resolve, func(p inspect.Problem) {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), p)
	})
	if err != nil {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), err)
	}
}

// openDB opens path and closes it at the end of the test.
func openDB(t testing.TB, path string, opts bolt.Options) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(context.Background(), path, opts)
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

// openPods opens the pods resource of db with the protobuf codec.
func openPods(t testing.TB, db *bolt.DB, indexers cache.Indexers) *bolt.Store {
	t.Helper()
	s, err := db.Resource(context.Background(), bolt.ResourceOptions{Identity: podsID, Codec: codec.Protobuf(nil), Indexers: indexers})
	if err != nil {
		t.Fatalf("Resource: %v", err)
	}
	return s
}

// byName resolves codec names with package codec.
func byName(name string) (codec.Codec, error) { return codec.ByName(nil, name) }

// verifyClean runs Verify and fails the test on any problem.
func verifyClean(t testing.TB, db *bolt.DB) {
	t.Helper()
	var problems []inspect.Problem
	if err := inspect.Verify(context.Background(), db, byName, func(p inspect.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, p := range problems {
		t.Errorf("Verify: %v", p)
	}
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

// rvOfPod returns p's resourceVersion, "<missing>" for nil.
func rvOfPod(p *corev1.Pod) string {
	if p == nil {
		return "<missing>"
	}
	return p.ResourceVersion
}
