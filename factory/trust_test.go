package factory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/store/bolt"
)

// bufferedFactory returns a factory on path whose log lines are kept.
func bufferedFactory(t *testing.T, path, host, cluster string) (*Factory, func() string) {
	t.Helper()
	return loggedFactory(t, Options{Path: path, RESTConfig: &rest.Config{Host: host}, ClusterID: cluster})
}

// loggedFactory returns a factory of opts, its file written without
// fsync, and the log lines it kept.
func loggedFactory(t *testing.T, opts Options) (*Factory, func() string) {
	t.Helper()
	l := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	opts.Bolt = bolt.Options{Sync: bolt.UnsafeNoSync}
	opts.Logger = &l
	f, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	logs := func() string { return l.GetSink().(ktesting.Underlier).GetBuffer().String() }
	return f, logs
}

// TestRecordedIdentityDiscards checks that a changed transform version or
// cluster discards the stored objects, with a log line saying why, before
// the informer can serve one, and that the same ones keep them.
func TestRecordedIdentityDiscards(t *testing.T) {
	src := newSource(t, "a", "b")
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	strip := func(obj interface{}) (interface{}, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			p.ManagedFields = nil
		}
		return obj, nil
	}
	steps := []struct {
		name, cluster, version string
		reason                 string // the discard's reason, "" when kept
	}{
		{"first start", "uid-1", "v1", ""},
		{"same cluster and transform version keep", "uid-1", "v1", ""},
		{"transform version changed", "uid-1", "v2", `transform version \"v1\" recorded, want \"v2\"`},
		{"cluster recreated", "uid-2", "v2", `cluster \"uid-1\" recorded, now connected to cluster \"uid-2\"`},
	}
	for i, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			f, logs := bufferedFactory(t, path, srv.URL, step.cluster)
			defer func() {
				if err := f.Shutdown(); err != nil {
					t.Error(err)
				}
			}()
			inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{}, WithTransform(strip), WithTransformVersion(step.version))
			if err != nil {
				t.Fatal(err)
			}
			// Before Start: what a warm start would serve.
			n := len(inf.GetIndexer().ListKeys())
			discarded := strings.Contains(logs(), "Discarded the cached data of the resource")
			switch {
			case i == 0:
			case step.reason == "" && (n != 2 || discarded):
				t.Errorf("kept data: %d objects before start (want 2), discarded %v; log:\n%s", n, discarded, logs())
			case step.reason != "" && (n != 0 || !strings.Contains(logs(), step.reason)):
				t.Errorf("discard: %d objects before start (want 0), log lacks %q:\n%s", n, step.reason, logs())
			}
			syncAll(ctx, t, f)
			if n := len(inf.GetIndexer().ListKeys()); n != 2 {
				t.Errorf("%d objects after sync, want 2", n)
			}
		})
	}
}

// TestClusterIDLookupFallback checks that a cluster whose kube-system
// namespace cannot be read leaves the identity unknown, with a log line.
func TestClusterIDLookupFallback(t *testing.T) {
	src := newSource(t)
	srv := serveSource(t, src)
	f, logs := bufferedFactory(t, filepath.Join(t.TempDir(), "f.db"), srv.URL, "")
	defer func() { _ = f.Shutdown() }()
	if f.cluster != "" || !strings.Contains(logs(), "Could not identify the cluster") {
		t.Errorf("cluster = %q; log:\n%s", f.cluster, logs())
	}
}
