package storetest

// Ports client-go's tools/cache/thread_safe_store_test.go at v0.36.3 where
// it goes through what cache.Indexer offers. client-go calls the
// ThreadSafeStore with explicit keys; through cache.Indexer the key comes
// from the key function, so the objects carry their key as their name,
// and client-go's Delete(key) without an object is a delete of a
// cache.DeletedFinalStateUnknown (no object, so no resourceVersion).
//
// Covered by the contract suite (Run) and not repeated here:
//   - TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex and
//     TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex:
//     Index/EmptiedSetsRemoved.
//   - TestThreadSafeStoreIndexingFunctionsWithMultipleValues:
//     Index/MultiValue (with pods and a comma-separated annotation).
//   - TestThreadSafeStoreRV "Initial state", "Replace" and "Delete":
//     ResourceVersion/AfterEachOperation; its "Add Update and Delete" is
//     ported below because of its objects without metadata, which only a
//     store holding arbitrary values can take.
//
// Added: AddIndexers after data followed by the writes that must maintain
// the added index (Update moving an object between values, Delete,
// Transaction, Replace), on every kind.

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// rvKeyFunc keys client-go's RV test objects: an *metav1.ObjectMeta by its
// name, a string by itself.
func rvKeyFunc(obj interface{}) (string, error) {
	if s, ok := obj.(string); ok {
		return s, nil
	}
	return cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
}

func testCGThreadSafeStoreRV(t *testing.T, h cgHarness) {
	store := h.open(t, rvKeyFunc, nil)
	om := func(key, rv string) *metav1.ObjectMeta { return &metav1.ObjectMeta{Name: key, ResourceVersion: rv} }
	wantRV := func(want, why string) {
		t.Helper()
		if rv := store.LastStoreSyncResourceVersion(); rv != want {
			t.Errorf("Expected RV to be %q %s, got %q", want, why, rv)
		}
	}

	// Add obj with RV "10"
	mustDo(t, "Add key1", store.Add(om("key1", "10")))
	wantRV("10", "")
	// Add obj with same RV "10"
	mustDo(t, "Add key3", store.Add(om("key3", "10")))
	wantRV("10", "after adding same RV")
	// Add obj with higher RV "20"
	mustDo(t, "Add key4", store.Add(om("key4", "20")))
	wantRV("20", "")
	// Delete an earlier object with a newer RV
	mustDo(t, "Delete key4", store.Delete(om("key4", "30")))
	wantRV("30", "after deletion")
	// Add non-meta object, should not be updated
	mustDo(t, "Add key5", store.Add("key5"))
	wantRV("30", "after adding non-meta object")
	// Add obj with RV "40"
	mustDo(t, "Add key6", store.Add(om("key6", "40")))
	wantRV("40", "")
	// Nil delete
	mustDo(t, "Delete key6", store.Delete(cache.DeletedFinalStateUnknown{Key: "key6"}))
	wantRV("40", "after delete")

	if err := store.Transaction(
		cache.Transaction{Object: om("key9", "40"), Type: cache.TransactionTypeUpdate},
		cache.Transaction{Object: om("key10", "30"), Type: cache.TransactionTypeUpdate},
		cache.Transaction{Object: om("key11", "50"), Type: cache.TransactionTypeUpdate},
	); err != nil {
		t.Fatalf("Transaction: %v", err)
	}
	wantRV("50", "after transaction")
	// Beyond client-go's test: what is stored.
	assertKeys(t, "ListKeys", store.ListKeys(), "key1", "key3", "key5", "key9", "key10", "key11")
}

// testCGAddedIndexMaintained: client-go's AddIndexers indexes the items
// already stored (threadSafeMap.AddIndexers), and every later write
// maintains the added index like the others, Replace included.
func testCGAddedIndexMaintained(t *testing.T, h cgHarness) {
	mk := h.kind.mk
	s := h.open(t, h.kind.keyFunc, nil)
	mustDo(t, "Add a", s.Add(mk("a", "x")))
	mustDo(t, "Add b", s.Add(mk("b", "x")))
	mustDo(t, "Add c", s.Add(mk("c", "y")))
	mustDo(t, "AddIndexers", s.AddIndexers(cache.Indexers{"by_val": h.kind.indexFunc}))

	check := func(step string, want map[string][]string) {
		t.Helper()
		var values []string
		for v, keys := range want {
			values = append(values, v)
			got, err := s.IndexKeys("by_val", v)
			if err != nil || !slices.Equal(got, keys) {
				t.Errorf("after %s: IndexKeys(by_val, %q) = %q, %v; want %q", step, v, got, err, keys)
			}
			objs, err := s.ByIndex("by_val", v)
			if err != nil || len(objs) != len(keys) {
				t.Errorf("after %s: ByIndex(by_val, %q) = %d objects, %v; want %d", step, v, len(objs), err, len(keys))
			}
		}
		assertKeys(t, "after "+step+": ListIndexFuncValues(by_val)", s.ListIndexFuncValues("by_val"), values...)
	}
	check("AddIndexers", map[string][]string{"x": {"a", "b"}, "y": {"c"}})

	mustDo(t, "Update a", s.Update(mk("a", "y")))
	check("Update a to y", map[string][]string{"x": {"b"}, "y": {"a", "c"}})

	mustDo(t, "Delete b", s.Delete(mk("b", "")))
	check("Delete b", map[string][]string{"y": {"a", "c"}})

	if err := s.Transaction(
		cache.Transaction{Object: mk("c", "z"), Type: cache.TransactionTypeUpdate},
		cache.Transaction{Object: mk("d", "z"), Type: cache.TransactionTypeAdd},
		cache.Transaction{Object: mk("a", ""), Type: cache.TransactionTypeDelete},
	); err != nil {
		t.Fatalf("Transaction: %v", err)
	}
	check("Transaction", map[string][]string{"z": {"c", "d"}})

	mustDo(t, "Replace", s.Replace([]interface{}{mk("e", "x"), mk("c", "w")}, "9"))
	check("Replace", map[string][]string{"x": {"e"}, "w": {"c"}})

	// A second index added after the first keeps both maintained.
	mustDo(t, "AddIndexers by_id", s.AddIndexers(cache.Indexers{"by_id": func(obj interface{}) ([]string, error) {
		return []string{h.kind.id(obj)}, nil
	}}))
	mustDo(t, "Replace again", s.Replace([]interface{}{mk("f", "x")}, "10"))
	check("second Replace", map[string][]string{"x": {"f"}})
	if keys, err := s.IndexKeys("by_id", "f"); err != nil || !slices.Equal(keys, []string{"f"}) {
		t.Errorf("IndexKeys(by_id, f) = %q, %v; want [f]", keys, err)
	}
	assertKeys(t, "ListIndexFuncValues(by_id)", s.ListIndexFuncValues("by_id"), "f")
}
