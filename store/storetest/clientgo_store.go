package storetest

// Ports client-go's tools/cache/store_test.go at v0.36.3. Adapted: every
// error client-go's test ignores is checked; objects are made by the
// harness's kind (client-go's testStoreObject, or a pod carrying its id
// and value); TestCacheWithTransformer, TestFIFOCache and
// TestUndeltaStore test other client-go types and TestKeyError the
// KeyError type itself, so they are not ported.

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
)

// testCGCache is client-go's TestCache (doTestStore). The store has no
// indexers, as client-go's NewStore.
func testCGCache(t *testing.T, h cgHarness) {
	s := h.open(t, h.kind.keyFunc, nil)
	mk := h.kind.mk

	mustDo(t, "Add foo", s.Add(mk("foo", "bar")))
	if item, ok, err := s.Get(mk("foo", "")); err != nil || !ok {
		t.Errorf("didn't find inserted item: %v", err)
	} else if e, a := "bar", h.kind.val(item); e != a {
		t.Errorf("expected %v, got %v", e, a)
	}
	mustDo(t, "Update foo", s.Update(mk("foo", "baz")))
	if item, ok, err := s.Get(mk("foo", "")); err != nil || !ok {
		t.Errorf("didn't find inserted item: %v", err)
	} else if e, a := "baz", h.kind.val(item); e != a {
		t.Errorf("expected %v, got %v", e, a)
	}
	mustDo(t, "Delete foo", s.Delete(mk("foo", "")))
	// client-go returns (nil, false, nil) for an absent key.
	if item, ok, err := s.Get(mk("foo", "")); ok || item != nil || err != nil {
		t.Errorf("Get of a deleted item = %v, %v, %v; want nil, false, nil", item, ok, err)
	}

	// Test List.
	mustDo(t, "Add a", s.Add(mk("a", "b")))
	mustDo(t, "Add c", s.Add(mk("c", "d")))
	mustDo(t, "Add e", s.Add(mk("e", "e")))
	found := sets.Set[string]{}
	for _, item := range s.List() {
		found.Insert(h.kind.val(item))
	}
	if !found.HasAll("b", "d", "e") {
		t.Errorf("missing items, found: %v", found)
	}
	if len(found) != 3 {
		t.Errorf("extra items")
	}

	// Test Replace.
	mustDo(t, "Replace", s.Replace([]interface{}{mk("foo", "foo"), mk("bar", "bar")}, "0"))
	found = sets.Set[string]{}
	for _, item := range s.List() {
		found.Insert(h.kind.val(item))
	}
	if !found.HasAll("foo", "bar") {
		t.Errorf("missing items")
	}
	if len(found) != 2 {
		t.Errorf("extra items")
	}
	// Beyond client-go's test: the keys are the replaced ones.
	assertKeys(t, "ListKeys after Replace", s.ListKeys(), "foo", "bar")
	if got := s.LastStoreSyncResourceVersion(); got != "0" {
		t.Errorf("LastStoreSyncResourceVersion after Replace = %q, want \"0\"", got)
	}
}

// testCGIndex is client-go's TestIndex (doTestIndex) with
// testStoreIndexers. client-go checks only that the expected ids are
// found; the port checks that nothing else is (as its later
// TestMultiIndexKeys does).
func testCGIndex(t *testing.T, h cgHarness) {
	s := h.openKind(t)
	mk := h.kind.mk

	expected := map[string]sets.Set[string]{}
	expected["b"] = sets.New("a", "c")
	expected["f"] = sets.New("e")
	expected["h"] = sets.New("g")
	expected["nope"] = sets.New[string]()
	mustDo(t, "Add a", s.Add(mk("a", "b")))
	mustDo(t, "Add c", s.Add(mk("c", "b")))
	mustDo(t, "Add e", s.Add(mk("e", "f")))
	mustDo(t, "Add g", s.Add(mk("g", "h")))
	for k, v := range expected {
		found := sets.Set[string]{}
		indexResults, err := s.Index("by_val", mk("", k))
		if err != nil {
			t.Errorf("Unexpected error %v", err)
		}
		for _, item := range indexResults {
			found.Insert(h.kind.id(item))
		}
		if !found.Equal(v) || len(indexResults) != v.Len() {
			t.Errorf("index %s: expected %v but found %v (%d objects)", k, sets.List(v), sets.List(found), len(indexResults))
		}
	}
}

// testCGTransactionIndexErrors is client-go's
// TestCacheTransactionShouldIndexErrors: the key function rejects some
// objects of a Transaction; the others are applied and their positions
// reported. client-go's objects are the ints 1 to 4, the successful ones
// keyed ""; here they are the kind's objects with an empty id (a pod
// without name, which client-go's default key function keys "" too)
// told apart by their value.
func testCGTransactionIndexErrors(t *testing.T, h cgHarness) {
	success1, success2 := h.kind.mk("", "success1"), h.kind.mk("", "success2")
	fail1, fail2 := h.kind.mk("", "fail1"), h.kind.mk("", "fail2")
	keyFunc := func(obj interface{}) (string, error) {
		if v := h.kind.val(obj); v == "success1" || v == "success2" {
			return "", nil
		}
		return "", errTest
	}
	cases := []struct {
		name       string
		objs       []interface{}
		wantErr    bool
		successful []int
		// stored is the value left under the key "", if any.
		stored string
	}{
		{"txn all success objects should work", []interface{}{success1, success2}, false, nil, "success2"},
		{"txn all fail objects should work", []interface{}{fail1, fail2}, true, []int{}, ""},
		{"txn mix success and fail objects should work", []interface{}{success1, fail1, success2, fail2}, true, []int{0, 2}, "success2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := h.open(t, keyFunc, nil)
			txns := make([]cache.Transaction, len(tc.objs))
			for i := range tc.objs {
				txns[i] = cache.Transaction{Object: tc.objs[i], Type: cache.TransactionTypeAdd}
			}
			txnErr := s.Transaction(txns...)
			if !tc.wantErr {
				if txnErr != nil {
					t.Errorf("unexpected error: %v", txnErr)
				}
			} else if txnErr == nil {
				t.Errorf("Transaction = nil, want a TransactionError")
			} else if !reflect.DeepEqual(txnErr.SuccessfulIndices, tc.successful) {
				// client-go asserts with testify's Equal: an empty
				// non-nil slice when nothing succeeded.
				t.Errorf("SuccessfulIndices = %#v, want %#v", txnErr.SuccessfulIndices, tc.successful)
			}
			item, ok, err := s.GetByKey("")
			switch {
			case err != nil:
				t.Errorf("GetByKey: %v", err)
			case tc.stored == "" && ok:
				t.Errorf("GetByKey(\"\") found %v, want nothing stored", item)
			case tc.stored != "" && (!ok || h.kind.val(item) != tc.stored):
				t.Errorf("GetByKey(\"\") = %v, %v; want the object with value %q", item, ok, tc.stored)
			}
		})
	}
}

// testCGResyncIsNoop: client-go's threadSafeMap.Resync does nothing and
// returns nil.
func testCGResyncIsNoop(t *testing.T, h cgHarness) {
	s := h.openKind(t)
	mustDo(t, "Replace", s.Replace([]interface{}{h.kind.mk("a", "x"), h.kind.mk("b", "y")}, "7"))
	if err := s.Resync(); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	assertKeys(t, "ListKeys after Resync", s.ListKeys(), "a", "b")
	if got := s.LastStoreSyncResourceVersion(); got != "7" {
		t.Errorf("LastStoreSyncResourceVersion after Resync = %q, want \"7\"", got)
	}
	keys, err := s.IndexKeys("by_val", "y")
	if err != nil || !reflect.DeepEqual(keys, []string{"b"}) {
		t.Errorf("IndexKeys(by_val, y) after Resync = %q, %v", keys, err)
	}
}

func mustDo(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
