package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// maxReported bounds the errors CheckConsistent reports.
const maxReported = 20

// CheckConsistent verifies that every read path of s agrees with its items
// (warmcache invariant 4):
//
//   - Scan visits keys in strictly increasing order; ListKeys holds the
//     same keys, List and State().Objects the same number of objects;
//     GetByKey and ResourceVersionOf agree with what Scan passed.
//   - For every index of GetIndexers, the index function applied to the
//     scanned objects yields exactly the values of ListIndexFuncValues
//     (so no emptied value is left over), and for each value IndexKeys
//     (sorted) and ScanIndex (in key order) return exactly the keys whose
//     objects yield it, and ByIndex the same objects.
//
// Objects are compared with apiequality.Semantic.DeepEqual. Keys of objects
// returned without their key (List, ByIndex) are computed with
// cache.DeletionHandlingMetaNamespaceKeyFunc, the default key function;
// objects it rejects are only counted. CheckConsistent reads the store
// several times, so it must not run concurrently with writers.
func CheckConsistent(t testing.TB, s store.Store) {
	t.Helper()
	c := checker{t: t}
	ctx := context.Background()

	items := map[string]interface{}{}
	var keys []string
	if err := s.Scan(ctx, func(key string, obj interface{}) error {
		if n := len(keys); n > 0 && key <= keys[n-1] {
			c.errorf("Scan passed %q after %q", key, keys[n-1])
		}
		keys = append(keys, key)
		items[key] = obj
		return nil
	}); err != nil {
		t.Errorf("CheckConsistent: Scan: %v", err)
		return
	}

	listKeys := slices.Sorted(slices.Values(s.ListKeys()))
	if !slices.Equal(listKeys, slices.Sorted(slices.Values(keys))) {
		c.errorf("ListKeys has %d keys, Scan %d, or they differ", len(listKeys), len(keys))
	}
	c.sameObjects("List", s.List(), items, keys)
	if st, err := s.State(); err != nil {
		c.errorf("State: %v", err)
	} else if st.Objects != len(keys) {
		c.errorf("State().Objects = %d, Scan found %d", st.Objects, len(keys))
	}
	for _, k := range keys {
		got, exists, err := s.GetByKey(k)
		if err != nil || !exists || !apiequality.Semantic.DeepEqual(got, items[k]) {
			c.errorf("GetByKey(%q) = exists %v, err %v, or differs from Scan", k, exists, err)
		}
		rv, exists, err := s.ResourceVersionOf(k)
		if m, merr := meta.Accessor(items[k]); merr == nil && (err != nil || !exists || rv != m.GetResourceVersion()) {
			c.errorf("ResourceVersionOf(%q) = %q, %v, %v; the object has %q", k, rv, exists, err, m.GetResourceVersion())
		}
	}

	for name, fn := range s.GetIndexers() {
		c.checkIndex(ctx, s, name, fn, items, keys)
	}
}

type checker struct {
	t        testing.TB
	reported int
}

func (c *checker) errorf(format string, args ...interface{}) {
	c.t.Helper()
	c.reported++
	if c.reported <= maxReported {
		c.t.Errorf("CheckConsistent: "+format, args...)
	} else if c.reported == maxReported+1 {
		c.t.Errorf("CheckConsistent: more errors not shown")
	}
}

func (c *checker) checkIndex(ctx context.Context, s store.Store, name string, fn cache.IndexFunc, items map[string]interface{}, keys []string) {
	c.t.Helper()
	want := map[string][]string{} // value -> keys in order
	for _, k := range keys {
		values, err := fn(items[k])
		if err != nil {
			c.errorf("index %q rejects stored %q: %v", name, k, err)
			continue
		}
		for _, v := range values {
			if ks := want[v]; len(ks) == 0 || ks[len(ks)-1] != k {
				want[v] = append(ks, k)
			}
		}
	}
	values := slices.Sorted(slices.Values(s.ListIndexFuncValues(name)))
	wantValues := make([]string, 0, len(want))
	for v := range want {
		wantValues = append(wantValues, v)
	}
	slices.Sort(wantValues)
	if !slices.Equal(values, wantValues) {
		c.errorf("index %q: ListIndexFuncValues = %q, the items yield %q", name, values, wantValues)
	}
	for _, v := range values {
		wantKeys := want[v]
		got, err := s.IndexKeys(name, v)
		if err != nil || !slices.Equal(got, wantKeys) {
			c.errorf("index %q: IndexKeys(%q) = %q, %v; want %q", name, v, got, err, wantKeys)
		}
		var scanned []string
		if err := s.ScanIndex(ctx, name, v, func(key string, obj interface{}) error {
			scanned = append(scanned, key)
			if !apiequality.Semantic.DeepEqual(obj, items[key]) {
				c.errorf("index %q: ScanIndex(%q) passed a %q that differs from Scan", name, v, key)
			}
			return nil
		}); err != nil || !slices.Equal(scanned, wantKeys) {
			c.errorf("index %q: ScanIndex(%q) visited %q, %v; want %q", name, v, scanned, err, wantKeys)
		}
		objs, err := s.ByIndex(name, v)
		if err != nil {
			c.errorf("index %q: ByIndex(%q): %v", name, v, err)
			continue
		}
		c.sameObjects(fmt.Sprintf("index %q: ByIndex(%q)", name, v), objs, items, wantKeys)
	}
}

// sameObjects checks that objs are the objects stored under keys.
func (c *checker) sameObjects(what string, objs []interface{}, items map[string]interface{}, keys []string) {
	c.t.Helper()
	if len(objs) != len(keys) {
		c.errorf("%s returned %d objects, want %d", what, len(objs), len(keys))
		return
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	for _, obj := range objs {
		k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			continue
		}
		if !want[k] {
			c.errorf("%s returned %q, not expected or twice", what, k)
			continue
		}
		delete(want, k)
		if !apiequality.Semantic.DeepEqual(obj, items[k]) {
			c.errorf("%s returned a %q that differs from Scan", what, k)
		}
	}
}
