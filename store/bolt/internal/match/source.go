package match

import (
	"reflect"
	"slices"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Source is where a selection finds its candidates: the items bucket,
// optionally restricted to the keys starting with Prefix, or an index
// bucket's entries filed under one value.
type Source struct {
	Index  string // "" for the items bucket
	Prefix []byte // item key prefix, or the index entry prefix
}

// SourceOf chooses the smallest set of entries that holds every object sel
// selects, in a store whose keys keyFunc makes and which has the index
// cache.NamespaceIndex if namespaceIndex.
func SourceOf(sel store.Selection, keyFunc cache.KeyFunc, namespaceIndex bool) Source {
	switch {
	case sel.Index != "":
		return Source{Index: sel.Index, Prefix: layout.AppendIndexPrefix(nil, sel.Value)}
	case sel.Namespace == "":
		return Source{}
	case NamespaceKeys(keyFunc):
		return Source{Prefix: append([]byte(sel.Namespace), '/')}
	case namespaceIndex:
		return Source{Index: cache.NamespaceIndex, Prefix: layout.AppendIndexPrefix(nil, sel.Namespace)}
	}
	return Source{}
}

// namespaceKeyFuncs are the key functions whose keys of namespaced objects
// all start with "namespace/".
var namespaceKeyFuncs = []uintptr{
	reflect.ValueOf(store.DefaultKeyFunc).Pointer(),
	reflect.ValueOf(cache.MetaNamespaceKeyFunc).Pointer(),
	reflect.ValueOf(cache.DeletionHandlingMetaNamespaceKeyFunc).Pointer(),
}

// NamespaceKeys reports whether fn is one of the key functions whose keys
// of namespaced objects all start with "namespace/" (store.DefaultKeyFunc
// and client-go's two).
func NamespaceKeys(fn cache.KeyFunc) bool {
	return fn != nil && slices.Contains(namespaceKeyFuncs, reflect.ValueOf(fn).Pointer())
}
