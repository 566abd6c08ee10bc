package match

import (
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// TestSourceOf checks the entries a selection reads: an index's entries
// under its value, the keys of a namespace with a namespace key function,
// else the namespace index's entries if there is one, else every item.
func TestSourceOf(t *testing.T) {
	byName := func(obj interface{}) (string, error) { return "", nil }
	for _, tc := range []struct {
		name    string
		sel     store.Selection
		keyFunc cache.KeyFunc
		nsIndex bool
		want    Source
	}{
		{"index", store.Selection{Index: "node", Value: "n1", Namespace: "ns"}, store.DefaultKeyFunc, true, Source{Index: "node", Prefix: layout.AppendIndexPrefix(nil, "n1")}},
		{"all", store.Selection{}, store.DefaultKeyFunc, true, Source{}},
		{"namespace keys", store.Selection{Namespace: "ns"}, cache.MetaNamespaceKeyFunc, true, Source{Prefix: []byte("ns/")}},
		{"namespace index", store.Selection{Namespace: "ns"}, byName, true, Source{Index: cache.NamespaceIndex, Prefix: layout.AppendIndexPrefix(nil, "ns")}},
		{"namespace, no index", store.Selection{Namespace: "ns"}, byName, false, Source{}},
		{"namespace, nil key function", store.Selection{Namespace: "ns"}, nil, false, Source{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SourceOf(tc.sel, tc.keyFunc, tc.nsIndex)
			if got.Index != tc.want.Index || string(got.Prefix) != string(tc.want.Prefix) {
				t.Errorf("SourceOf = %q %q, want %q %q", got.Index, got.Prefix, tc.want.Index, tc.want.Prefix)
			}
		})
	}
	for _, fn := range []cache.KeyFunc{store.DefaultKeyFunc, cache.MetaNamespaceKeyFunc, cache.DeletionHandlingMetaNamespaceKeyFunc} {
		if !NamespaceKeys(fn) {
			t.Errorf("NamespaceKeys(%p) = false, want true", fn)
		}
	}
	if NamespaceKeys(byName) || NamespaceKeys(nil) {
		t.Error("NamespaceKeys of another key function or nil: true, want false")
	}
}
