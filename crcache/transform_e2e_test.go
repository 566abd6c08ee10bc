package crcache

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/warmcache/warmcache/factory"
)

// A DefaultTransform that changes between two caches on one file, with
// Options.TransformVersion changed too, is never served from what the old
// one stored: the warm start relists.
func TestTransformVersionRelists(t *testing.T) {
	t.Parallel()
	ctx, env, cs := startEnv(t)
	ns := env.Namespace(ctx, t, "transform")
	create(ctx, t, cs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}})
	path := filepath.Join(t.TempDir(), "cache.db")
	labelWith := func(v string) toolscache.TransformFunc {
		return func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetLabels(map[string]string{"transform": v})
			}
			return obj, nil
		}
	}
	// label runs a cache whose transform labels objects with v, recorded
	// as transform version v, and returns the label of the cached
	// ConfigMap.
	label := func(v string) string {
		t.Helper()
		c, err := NewCache(Options{Factory: factory.Options{Path: path}, TransformVersion: v})(env.RestConfig(), cache.Options{
			Scheme:            newScheme(t),
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			DefaultTransform:  labelWith(v),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
		r := run(ctx, t, c)
		defer r.stop(t)
		cm := &corev1.ConfigMap{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Labels["transform"]
	}
	if got := label("1"); got != "1" {
		t.Fatalf("cold start: the ConfigMap has transform label %q, want 1", got)
	}
	if got := label("2"); got != "2" {
		t.Errorf("warm start with a new transform and version: the ConfigMap has transform label %q, want 2", got)
	}
}
