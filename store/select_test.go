package store_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

func TestSelectionMatches(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: map[string]string{"app": "x"}}}
	for _, tc := range []struct {
		sel  store.Selection
		want bool
	}{
		{store.Selection{}, true},
		{store.Selection{Namespace: "ns"}, true},
		{store.Selection{Namespace: "other"}, false},
		{store.Selection{Labels: labels.SelectorFromSet(labels.Set{"app": "x"})}, true},
		{store.Selection{Labels: labels.SelectorFromSet(labels.Set{"app": "y"})}, false},
		{store.Selection{Namespace: "ns", Labels: labels.Everything()}, true},
	} {
		if got, err := tc.sel.Matches(p); err != nil || got != tc.want {
			t.Errorf("%+v.Matches = %v, %v; want %v", tc.sel, got, err, tc.want)
		}
	}
	if _, err := (store.Selection{Namespace: "ns"}).Matches(42); err == nil {
		t.Error("Matches of an object without metadata did not fail")
	}
	if ok, err := (store.Selection{}).Matches(42); !ok || err != nil {
		t.Errorf("an empty selection = %v, %v; want every object", ok, err)
	}
}

// A plain cache.Indexer is read through the index the selection names.
func TestSelectOnAPlainIndexer(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"byApp": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Labels["app"]}, nil
	}})
	for _, n := range []string{"a", "b", "c"} {
		if err := idx.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-" + n, Name: n, Labels: map[string]string{"app": n}}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	collect := func(_ string, obj interface{}) error { got = append(got, obj.(*corev1.Pod).Name); return nil }
	if err := store.Select(context.Background(), idx, store.Selection{Index: "byApp", Value: "b"}, collect); err != nil || len(got) != 1 || got[0] != "b" {
		t.Fatalf("by index: %q, %v", got, err)
	}
	got = nil
	if err := store.Select(context.Background(), idx, store.Selection{Namespace: "ns-c"}, collect); err != nil || len(got) != 1 || got[0] != "c" {
		t.Fatalf("by namespace without its index: %q, %v", got, err)
	}
	if err := store.Select(context.Background(), idx, store.Selection{Index: "nope"}, collect); err == nil {
		t.Fatal("an unknown index did not fail")
	}
	stop := errors.New("stop")
	if err := store.Select(context.Background(), idx, store.Selection{}, func(string, interface{}) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("the callback's error was not returned: %v", err)
	}
}
