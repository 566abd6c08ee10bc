package crcache

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
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

// TestTagOptionsScopesByKind: the scopes the removed example scopeOf
// derived, now per informer map: everything, one namespace, default
// selectors, and a ByObject selector for one kind beside the default
// namespace.
func TestTagOptionsScopesByKind(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"team": "a"})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts cache.Options
		// default map's scope per namespace ("" is the cluster-wide map),
		// and the ConfigMap ByObject's scope per namespace.
		defaults, configMaps map[string]factory.Scope
	}{
		{name: "everything", defaults: map[string]factory.Scope{"": {}}},
		{
			name:     "one namespace",
			opts:     cache.Options{DefaultNamespaces: map[string]cache.Config{"ns": {}}},
			defaults: map[string]factory.Scope{"": {}, "ns": {Namespace: "ns"}},
		},
		{
			name:     "default selectors",
			opts:     cache.Options{DefaultLabelSelector: sel, DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", "x")},
			defaults: map[string]factory.Scope{"": {LabelSelector: "team=a", FieldSelector: "metadata.name=x"}},
		},
		{
			name: "a selector for one kind",
			opts: cache.Options{
				DefaultNamespaces: map[string]cache.Config{"ns": {}},
				ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: sel}},
			},
			defaults:   map[string]factory.Scope{"": {}, "ns": {Namespace: "ns"}},
			configMaps: map[string]factory.Scope{"ns": {Namespace: "ns", LabelSelector: "team=a"}},
		},
		{
			name: "a cluster-scoped kind's selector",
			opts: cache.Options{
				ByObject: map[client.Object]cache.ByObject{&corev1.Node{}: {Label: sel}},
			},
			defaults: map[string]factory.Scope{"": {}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Scheme, tc.opts.Mapper = s, mapper
			o, err := tagOptions(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for ns, want := range tc.defaults {
				fn := o.DefaultTransform
				if ns != "" {
					fn = o.DefaultNamespaces[ns].Transform
				}
				if tg := tagOf(fn); tg == nil || tg.scope != want {
					t.Errorf("default map %q: tag %+v, want scope %+v", ns, tg, want)
				}
			}
			for obj, b := range o.ByObject {
				switch obj.(type) {
				case *corev1.ConfigMap:
					for ns, want := range tc.configMaps {
						if tg := tagOf(b.Namespaces[ns].Transform); tg == nil || tg.scope != want {
							t.Errorf("ConfigMaps in %q: tag %+v, want scope %+v", ns, tg, want)
						}
					}
				case *corev1.Node:
					if tg := tagOf(b.Transform); tg == nil || tg.scope != (factory.Scope{LabelSelector: "team=a"}) {
						t.Errorf("Nodes: tag %+v, want the selector, no namespace", tg)
					}
				}
			}
		})
	}
}

// TestTaggedTransformAppliesTheConfigs: a tagged transform answers the
// probe without calling the config's transform, and hands every object to
// it.
func TestTaggedTransformAppliesTheConfigs(t *testing.T) {
	calls := 0
	user := func(o any) (any, error) {
		calls++
		cm := o.(*corev1.ConfigMap)
		cm.Annotations = map[string]string{"transformed": "yes"}
		return cm, nil
	}
	o, err := tagOptions(cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {Transform: user}}})
	if err != nil {
		t.Fatal(err)
	}
	fn := o.DefaultNamespaces["a"].Transform
	if tg := tagOf(fn); tg == nil || tg.scope != (factory.Scope{Namespace: "a"}) || calls != 0 {
		t.Fatalf("tag %+v after %d calls of the config's transform, want namespace a's and none", tg, calls)
	}
	out, err := fn(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if out.(*corev1.ConfigMap).Annotations["transformed"] != "yes" || calls != 1 {
		t.Errorf("the config's transform ran %d times, object %+v", calls, out)
	}
}
