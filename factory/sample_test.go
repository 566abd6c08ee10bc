package factory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// shape returns a transform that records s in the annotation "shape".
func shape(s string) cache.TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			p.Annotations = map[string]string{"shape": s}
		}
		return obj, nil
	}
}

// byNode returns an index function filing a pod under its node name and
// suffix.
func byNode(suffix string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName + suffix}, nil
	}
}

// sampleStep is one start of a factory on the test's file.
type sampleStep struct {
	name      string
	transform cache.TransformFunc // nil: none
	indexSuf  string              // the byNode index function's suffix
	reason    string              // the discard's log line, "" when the stored objects are kept
	shape     string              // the annotation the objects have after sync, "" for none
}

// runSampleSteps starts a factory on one file for each step, each with an
// informer of the pods of src, and checks what it kept and served.
func runSampleSteps(t *testing.T, steps []sampleStep) {
	src := newSource(t, "a", "b")
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, step := range steps {
		f, logs := bufferedFactory(t, path, srv.URL, "cluster")
		opts := []InformerOption{WithIndexers(cache.Indexers{"byNode": byNode(step.indexSuf)})}
		if step.transform != nil {
			opts = append(opts, WithTransform(step.transform))
		}
		inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		// Before Start: what a warm start would serve.
		kept := len(inf.GetIndexer().ListKeys())
		switch {
		case i == 0:
		case step.reason == "" && (kept != 2 || strings.Contains(logs(), "Discarding the stored objects")):
			t.Errorf("%s: the stored objects were not kept (%d before start, want 2); log:\n%s", step.name, kept, logs())
		case step.reason != "" && (kept != 0 || !strings.Contains(logs(), step.reason)):
			t.Errorf("%s: %d objects kept before start, want 0 and a log line with %q; log:\n%s", step.name, kept, step.reason, logs())
		}
		before := strings.Count(logs(), "Relist committed")
		syncAll(ctx, t, f)
		for _, obj := range inf.GetIndexer().List() {
			if got := obj.(*corev1.Pod).Annotations["shape"]; got != step.shape {
				t.Errorf("%s: %s served with shape %q, want %q", step.name, obj.(*corev1.Pod).Name, got, step.shape)
			}
		}
		if objs, err := inf.GetIndexer().ByIndex("byNode", step.indexSuf); err != nil || len(objs) != 2 {
			t.Errorf("%s: ByIndex(byNode) = %d objects, %v; want 2", step.name, len(objs), err)
		}
		// A relist commits what it listed; the warm start's check (a page
		// of resourceVersions when the store is small) commits nothing
		// when nothing changed.
		relisted := strings.Count(logs(), "Relist committed") > before
		if want := i == 0 || step.reason != ""; relisted != want {
			t.Errorf("%s: relisted %v, want %v", step.name, relisted, want)
		}
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	transformChanged = "the transform's output on the stored sample object changed"
	indexChanged     = `index function "byNode"'s output on the stored sample object changed`
)

// A transform that changes meaning without a new transform version is
// found on the stored sample object: the stored objects are discarded
// before the informer can serve one, with a log line saying why, and
// relisted; unchanged functions keep them (a warm start stays warm). The
// same for an index function given at creation.
func TestChangedFunctionsAreDetected(t *testing.T) {
	t.Run("transform", func(t *testing.T) {
		runSampleSteps(t, []sampleStep{
			{name: "cold start", transform: shape("1"), shape: "1"},
			{name: "same transform", transform: shape("1"), shape: "1"},
			{name: "transform changed", transform: shape("2"), reason: transformChanged, shape: "2"},
			{name: "the changed transform again", transform: shape("2"), shape: "2"},
			{name: "transform removed", reason: transformChanged},
			{name: "no transform again"},
			{name: "transform added", transform: shape("3"), reason: transformChanged, shape: "3"},
		})
	})
	t.Run("transform added after a cold start without one", func(t *testing.T) {
		// Without a transform the sample is taken from the stored objects
		// when the factory shuts down.
		runSampleSteps(t, []sampleStep{
			{name: "cold start"},
			{name: "transform added", transform: shape("1"), reason: transformChanged, shape: "1"},
		})
	})
	t.Run("index function", func(t *testing.T) {
		runSampleSteps(t, []sampleStep{
			{name: "cold start", indexSuf: "-a"},
			{name: "same index function", indexSuf: "-a"},
			{name: "index function changed", indexSuf: "-b", reason: indexChanged},
			{name: "the changed function again", indexSuf: "-b"},
		})
	})
}

// A transform whose output differs for the same object cannot be
// checked: it keeps the stored objects, with a log line saying so.
func TestUnstableTransformIsNotChecked(t *testing.T) {
	var n atomic.Int64
	unstable := func(obj interface{}) (interface{}, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			p.Annotations = map[string]string{"call": fmt.Sprint(n.Add(1))}
		}
		return obj, nil
	}
	src := newSource(t, "a", "b")
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for run := range 2 {
		f, logs := bufferedFactory(t, path, srv.URL, "cluster")
		inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{}, WithTransform(unstable))
		if err != nil {
			t.Fatal(err)
		}
		if kept := len(inf.GetIndexer().ListKeys()); run == 1 && kept != 2 {
			t.Errorf("run %d: %d objects kept, want 2; log:\n%s", run, kept, logs())
		}
		syncAll(ctx, t, f)
		if !strings.Contains(logs(), "Cannot check the transform") || strings.Contains(logs(), "Discarding the stored objects") {
			t.Errorf("run %d: want a line saying the transform cannot be checked, and no discard; log:\n%s", run, logs())
		}
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

// The sample is kept in a resource of its own, whose identity is the
// informer's with suffixes after the resource and the kind, with the
// resource's codec; it holds one object.
func TestSampleResource(t *testing.T) {
	src := newSource(t, "a", "b")
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, _ := bufferedFactory(t, path, srv.URL, "cluster")
	if _, err := f.ForResource(ctx, podsGVR, "Pod", Scope{Namespace: "ns"}, WithTransform(shape("1"))); err != nil {
		t.Fatal(err)
	}
	syncAll(ctx, t, f)
	res, err := inspect.Resources(ctx, f.DB())
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, r := range res {
		found = append(found, fmt.Sprintf("%s %s %s %d", r.Identity.Resource, r.Identity.Kind, r.Identity.Namespace, r.Objects))
		if IsSample(r.Identity) && r.Codec != res[0].Codec {
			t.Errorf("the sample's codec is %q, the resource's %q", r.Codec, res[0].Codec)
		}
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"pods Pod ns 2": true, "pods-sample Pod sample ns 1": true}
	if len(found) != 2 || !want[found[0]] || !want[found[1]] {
		t.Fatalf("resources in the file: %q, want %v", found, want)
	}
}
