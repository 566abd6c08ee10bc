package factory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/store/bolt"
)

// A warm start must find the index set it recorded: opening the store
// without the informer's indexers would make bolt drop the index entries
// and rebuild them by decoding every object.
func TestFactoryWarmStartKeepsIndexes(t *testing.T) {
	src := newSource(t, "a", "b")
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byName := cache.Indexers{"byName": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Name}, nil
	}}
	run := func() string {
		l := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
		f, err := New(ctx, Options{
			Path:       path,
			Bolt:       bolt.Options{Sync: bolt.UnsafeNoSync},
			RESTConfig: &rest.Config{Host: srv.URL},
			Informer:   informer.Options{Indexers: byName},
			Logger:     &l,
		})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{})
		if err != nil {
			t.Fatal(err)
		}
		syncAll(ctx, t, f)
		if keys, err := inf.GetIndexer().IndexKeys("byName", "a"); err != nil || len(keys) != 1 {
			t.Fatalf("IndexKeys(byName, a) = %v, %v", keys, err)
		}
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
		return l.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
	run()
	if logs := run(); strings.Contains(logs, "Rebuilding the index entries") {
		t.Fatalf("warm start rebuilt the indexes:\n%s", logs)
	}
}

// Indexers given to ForResource are the store's from its creation, with
// client-go's namespace index added; a warm start keeps their entries and
// the informer runs the transform given with it.
func TestForResourceTakesIndexersAndTransform(t *testing.T) {
	src := newSource(t, "a", "b")
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byName := cache.Indexers{"byName": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Name}, nil
	}}
	strip := func(obj interface{}) (interface{}, error) {
		p := obj.(*corev1.Pod)
		p.Annotations = map[string]string{"transformed": "yes"}
		return p, nil
	}
	run := func() string {
		l := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
		f, err := New(ctx, Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}, RESTConfig: &rest.Config{Host: srv.URL}, Logger: &l})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{}, WithIndexers(byName), WithTransform(strip))
		if err != nil {
			t.Fatal(err)
		}
		if got := inf.GetIndexer().GetIndexers(); len(got) != 2 || got[cache.NamespaceIndex] == nil || got["byName"] == nil {
			t.Fatalf("indexers = %v, want byName and the namespace index", got)
		}
		syncAll(ctx, t, f)
		if keys, err := inf.GetIndexer().IndexKeys(cache.NamespaceIndex, "ns"); err != nil || len(keys) != 2 {
			t.Fatalf("IndexKeys(namespace, ns) = %v, %v", keys, err)
		}
		obj, ok, err := inf.GetIndexer().GetByKey("ns/a")
		if err != nil || !ok || obj.(*corev1.Pod).Annotations["transformed"] != "yes" {
			t.Fatalf("GetByKey(ns/a) = %v, %v, %v; want the transformed pod", obj, ok, err)
		}
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
		return l.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
	run()
	if logs := run(); strings.Contains(logs, "Rebuilding the index entries") {
		t.Fatalf("warm start rebuilt the indexes:\n%s", logs)
	}
}

// An index function that changes meaning under the same name, with
// WithIndexVersion changed too, gets its entries rebuilt on the warm
// start: ByIndex answers with the new function, never from the entries
// the old one filed.
func TestWithIndexVersionRebuildsAChangedIndex(t *testing.T) {
	src := newSource(t, "a", "b")
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byName := func(obj interface{}) ([]string, error) { return []string{obj.(*corev1.Pod).Name}, nil }
	byUpperName := func(obj interface{}) ([]string, error) { return []string{strings.ToUpper(obj.(*corev1.Pod).Name)}, nil }
	// run runs the informer with fn as its "name" index and returns the
	// keys filed under value, and the logs.
	run := func(fn cache.IndexFunc, value string, opts ...InformerOption) ([]string, string) {
		l := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
		f, err := New(ctx, Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}, RESTConfig: &rest.Config{Host: srv.URL}, Logger: &l})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{}, append(opts, WithIndexers(cache.Indexers{"name": fn}))...)
		if err != nil {
			t.Fatal(err)
		}
		syncAll(ctx, t, f)
		keys, err := inf.GetIndexer().IndexKeys("name", value)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
		return keys, l.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
	if keys, _ := run(byName, "a"); len(keys) != 1 || keys[0] != "ns/a" {
		t.Fatalf("IndexKeys(name, a) = %v, want [ns/a]", keys)
	}
	keys, logs := run(byUpperName, "A", WithIndexVersion("upper"))
	if len(keys) != 1 || keys[0] != "ns/a" {
		t.Errorf("after the index function and version changed, IndexKeys(name, A) = %v, want [ns/a]", keys)
	}
	if !strings.Contains(logs, "Rebuilding the index entries") {
		t.Errorf("the warm start with a new index version did not rebuild the indexes:\n%s", logs)
	}
	// The same version again: the entries are kept.
	keys, logs = run(byUpperName, "A", WithIndexVersion("upper"))
	if len(keys) != 1 || keys[0] != "ns/a" {
		t.Errorf("IndexKeys(name, A) = %v, want [ns/a]", keys)
	}
	if strings.Contains(logs, "Rebuilding the index entries") {
		t.Errorf("a warm start with the recorded index version rebuilt the indexes:\n%s", logs)
	}
}
