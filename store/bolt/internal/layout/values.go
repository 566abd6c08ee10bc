package layout

import (
	"slices"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// IndexValues returns the values index name's function fn gives obj (whose
// key is key), sorted and deduplicated, as they are recorded in reverse
// entries. Errors are those of store.IndexValuesOf.
func IndexValues(name string, fn cache.IndexFunc, key string, obj interface{}) ([]string, error) {
	vs, err := store.IndexValuesOf(name, fn, key, obj)
	if err != nil {
		return nil, err
	}
	if len(vs) <= 1 {
		return vs, nil
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return slices.Compact(vs), nil
}
