package crcache

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/warmcache/warmcache/factory"
)

// TestUnsupportedOptionsFailAtConstruction: options crcache cannot serve
// from persistent informers fail NewCache's function with ErrUnsupported,
// before any informer exists.
func TestUnsupportedOptionsFailAtConstruction(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		opts cache.Options
	}{
		{"NewInformer set", cache.Options{NewInformer: func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
			return nil
		}}},
		{"all-namespaces default namespace", cache.Options{DefaultNamespaces: map[string]cache.Config{"": {}, "a": {}}}},
		{"all-namespaces ByObject namespace", cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{"": {}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.db")
			c, err := NewCache(Options{Factory: factory.Options{Path: path}})(cfg, tc.opts)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("NewCache = %v, %v; want an error wrapping ErrUnsupported", c, err)
			}
		})
	}
	if _, err := NewCache(Options{})(cfg, cache.Options{}); !errors.Is(err, factory.ErrInvalidOptions) {
		t.Errorf("no path: %v, want factory.ErrInvalidOptions", err)
	}
}

// TestTagOptionsScopes: every informer map's config is tagged with the
// scope controller-runtime's defaulting gives it.
func TestTagOptionsScopes(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"team": "a"})
	o, err := tagOptions(cache.Options{
		DefaultNamespaces:    map[string]cache.Config{"a": {}, "b": {LabelSelector: labels.SelectorFromSet(labels.Set{"x": "y"})}},
		DefaultLabelSelector: sel,
	})
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]factory.Scope{
		"a": {Namespace: "a", LabelSelector: "team=a"},
		"b": {Namespace: "b", LabelSelector: "x=y"},
	} {
		tg := tagOf(o.DefaultNamespaces[ns].Transform)
		if tg == nil || tg.scope != want {
			t.Errorf("namespace %s: tag %+v, want scope %+v", ns, tg, want)
		}
	}
	if tg := tagOf(o.DefaultTransform); tg == nil || tg.scope != (factory.Scope{LabelSelector: "team=a"}) {
		t.Errorf("cluster-wide map: tag %+v, want the default selector", tg)
	}
	if tagOf(func(o any) (any, error) { return o, nil }) != nil {
		t.Error("an untagged transform has a tag")
	}
}
