package store_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

func TestKeyOf(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	tests := []struct {
		name    string
		fn      cache.KeyFunc
		obj     interface{}
		want    string
		wantErr bool
	}{
		{name: "default", obj: pod, want: "ns/a"},
		{name: "tombstone keeps its key", obj: cache.DeletedFinalStateUnknown{Key: "x/y", Obj: pod}, want: "x/y"},
		{name: "custom", fn: func(obj interface{}) (string, error) { return "k-" + obj.(*corev1.Pod).Name, nil }, obj: pod, want: "k-a"},
		{name: "typed nil panics in client-go, error here", obj: (*corev1.Pod)(nil), wantErr: true},
		{name: "error", fn: func(interface{}) (string, error) { return "", errors.New("no") }, obj: pod, wantErr: true},
		{name: "no metadata", obj: 42, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.KeyOf(tt.fn, tt.obj)
			if tt.wantErr {
				var ke cache.KeyError
				if !errors.As(err, &ke) {
					t.Fatalf("KeyOf = %q, %v; want a cache.KeyError", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("KeyOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestIndexValuesOf(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	got, err := store.IndexValuesOf("namespace", cache.MetaNamespaceIndexFunc, "ns/a", pod)
	if err != nil || len(got) != 1 || got[0] != "ns" {
		t.Fatalf("IndexValuesOf = %v, %v; want [ns]", got, err)
	}
	boom := errors.New("boom")
	for name, fn := range map[string]cache.IndexFunc{
		"error": func(interface{}) ([]string, error) { return nil, boom },
		"panic": func(obj interface{}) ([]string, error) { return []string{obj.(*corev1.Node).Name}, nil },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := store.IndexValuesOf("byNode", fn, "ns/a", pod)
			if !errors.Is(err, store.ErrIndexFunc) {
				t.Fatalf("err = %v; want ErrIndexFunc", err)
			}
			if name == "error" && !errors.Is(err, boom) {
				t.Fatalf("err = %v; want the function's own error wrapped", err)
			}
		})
	}
}
