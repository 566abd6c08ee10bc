package main

import (
	"errors"
	"testing"

	"github.com/warmcache/warmcache/factory"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestScopeOf(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{"team": "a"})
	for _, tc := range []struct {
		name           string
		opts           cache.Options
		pod, configMap factory.Scope
		wantErr        error
	}{
		{name: "everything", opts: cache.Options{}},
		{
			name: "one namespace",
			opts: cache.Options{DefaultNamespaces: map[string]cache.Config{"ns": {}}},
			pod:  factory.Scope{Namespace: "ns"}, configMap: factory.Scope{Namespace: "ns"},
		},
		{
			name:      "default selectors",
			opts:      cache.Options{DefaultLabelSelector: sel, DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", "x")},
			pod:       factory.Scope{LabelSelector: "team=a", FieldSelector: "metadata.name=x"},
			configMap: factory.Scope{LabelSelector: "team=a", FieldSelector: "metadata.name=x"},
		},
		{
			name: "a selector for one kind",
			opts: cache.Options{
				DefaultNamespaces: map[string]cache.Config{"ns": {}},
				ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: sel}},
			},
			pod: factory.Scope{Namespace: "ns"}, configMap: factory.Scope{Namespace: "ns", LabelSelector: "team=a"},
		},
		{
			name:    "two namespaces",
			opts:    cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {}}},
			wantErr: errScope,
		},
		{
			name:    "a namespace with its own selector",
			opts:    cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {LabelSelector: sel}}},
			wantErr: errScope,
		},
		{
			name:    "per-object namespaces",
			opts:    cache.Options{ByObject: map[client.Object]cache.ByObject{&appsv1.Deployment{}: {Namespaces: map[string]cache.Config{"a": {}}}}},
			wantErr: errScope,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := scopeOf(tc.opts, s)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("scopeOf = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got := f(&corev1.Pod{}); got != tc.pod {
				t.Errorf("pods: %+v, want %+v", got, tc.pod)
			}
			if got := f(&corev1.ConfigMap{}); got != tc.configMap {
				t.Errorf("configmaps: %+v, want %+v", got, tc.configMap)
			}
		})
	}
}
