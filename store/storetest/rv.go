package storetest

import (
	"errors"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// testRVAfterEachOperation walks client-go's resourceVersion rules
// (threadSafeMap, AtomicFIFO on): every write records its object's RV,
// whatever it is, even older or empty; objects without metadata record
// nothing; failed writes record nothing.
func testRVAfterEachOperation(t *testing.T, h harness) {
	s := h.open(t, nil)
	a := mkPod("ns", "a", "10")
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"initial", func() error { return nil }, ""},
		{"Add rv 10", func() error { return s.Add(a) }, "10"},
		{"Add another with the same rv", func() error { return s.Add(mkPod("ns", "b", "10")) }, "10"},
		{"Update rv 20", func() error { return s.Update(withRV(a, "20")) }, "20"},
		{"Update with an older rv", func() error { return s.Update(mkPod("ns", "b", "15")) }, "15"},
		{"Delete with rv 30", func() error { return s.Delete(withRV(a, "30")) }, "30"},
		{"Delete of an absent key with rv 35", func() error { return s.Delete(mkPod("ns", "absent", "35")) }, "35"},
		{"Delete of a tombstone", func() error {
			return s.Delete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: mkPod("ns", "b", "99")})
		}, "35"},
		{"Add with a key error", func() error {
			if err := s.Add(notAnObject{}); err == nil {
				return errors.New("no error")
			}
			return nil
		}, "35"},
		{"Add rv 40", func() error { return s.Add(mkPod("ns", "c", "40")) }, "40"},
		{"Add with an empty rv", func() error { return s.Add(mkPod("ns", "d", "")) }, ""},
		{"Bookmark 45", func() error { s.Bookmark("45"); return nil }, "45"},
		{"Replace at 50", func() error { return s.Replace([]interface{}{mkPod("ns", "e", "48")}, "50") }, "50"},
		{"Replace with an empty rv", func() error { return s.Replace(nil, "") }, ""},
		{"Bookmark 60", func() error { s.Bookmark("60"); return nil }, "60"},
		{"Bookmark empty", func() error { s.Bookmark(""); return nil }, ""},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := s.LastStoreSyncResourceVersion(); got != step.want {
			t.Errorf("after %s: LastStoreSyncResourceVersion = %q, want %q", step.name, got, step.want)
		}
		if st, err := s.State(); err != nil || st.ResourceVersion != step.want {
			t.Errorf("after %s: State = %+v, %v; want rv %q", step.name, st, err, step.want)
		}
	}
}

func testBookmark(t *testing.T, h harness) {
	a := mkPod("ns", "a", "3")
	s := h.open(t, nil, a)
	s.Bookmark("7")
	assertRV(t, s, "7")
	assertContent(t, s, a)
	if rv, exists, err := s.ResourceVersionOf("ns/a"); err != nil || !exists || rv != "3" {
		t.Errorf("ResourceVersionOf after Bookmark = %q, %v, %v; want the object's own 3", rv, exists, err)
	}
}

func add(obj interface{}) cache.Transaction {
	return cache.Transaction{Type: cache.TransactionTypeAdd, Object: obj}
}

func update(obj interface{}) cache.Transaction {
	return cache.Transaction{Type: cache.TransactionTypeUpdate, Object: obj}
}

func del(obj interface{}) cache.Transaction {
	return cache.Transaction{Type: cache.TransactionTypeDelete, Object: obj}
}

func testTransactionInOrder(t *testing.T, h harness) {
	a, b := mkPod("ns", "a", "1", users("ernie")), mkPod("ns", "b", "2")
	s := h.open(t, nil, a, b)
	a5, c6, c8 := withRV(a, "5"), mkPod("ns", "c", "6", users("bert")), mkPod("ns", "c", "8", users("oscar"))
	a5.Annotations[annotationUsers] = "elmo"
	if err := s.Transaction(update(a5), del(withRV(b, "4")), add(c6), del(mkPod("ns", "absent", "7")), update(c8)); err != nil {
		t.Fatalf("Transaction: %v", err)
	}
	assertStored(t, s, "8", a5, c8)
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "elmo", "oscar")
}

// testTransactionPartialKeyErrors: as in client-go, the transactions with
// a key error are skipped and reported, the others are applied.
func testTransactionPartialKeyErrors(t *testing.T, h harness) {
	s := h.open(t, nil, mkPod("ns", "gone", "1"))
	ok0, ok2 := mkPod("ns", "a", "2"), mkPod("ns", "b", "3")
	terr := s.Transaction(add(ok0), add(notAnObject{"x"}), add(ok2), del(mkPod("ns", "gone", "4")), update("no meta"))
	if terr == nil {
		t.Fatal("Transaction with key errors returned nil")
	}
	if !slices.Equal(terr.SuccessfulIndices, []int{0, 2, 3}) {
		t.Errorf("SuccessfulIndices = %v, want [0 2 3]", terr.SuccessfulIndices)
	}
	if terr.TotalTransactions != 5 {
		t.Errorf("TotalTransactions = %d, want 5", terr.TotalTransactions)
	}
	if len(terr.Errors) != 2 {
		t.Errorf("Errors = %v, want 2", terr.Errors)
	}
	for _, err := range terr.Errors {
		if !isKeyError(err) {
			t.Errorf("error %v is not a cache.KeyError", err)
		}
	}
	assertContent(t, s, ok0, ok2)
	// The RV of the last applied transaction.
	assertRV(t, s, "4")
}

func testTransactionAllKeyErrors(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	terr := s.Transaction(add(notAnObject{}), del(nil))
	if terr == nil {
		t.Fatal("Transaction of key errors only returned nil")
	}
	if len(terr.SuccessfulIndices) != 0 || terr.TotalTransactions != 2 || len(terr.Errors) != 2 {
		t.Errorf("TransactionError = %+v", terr)
	}
	assertStored(t, s, "1", a)
}

func testTransactionIndexError(t *testing.T, h harness) {
	s := h.open(t, pickyIndexers())
	a, c := mkPod("ns", "a", "1"), mkPod("ns", "c", "3")
	terr := s.Transaction(add(a), add(mkPod("ns", "b", "2", rejected())), add(c))
	if terr == nil {
		t.Fatal("Transaction with a rejected object returned nil")
	}
	if !slices.Equal(terr.SuccessfulIndices, []int{0, 2}) || len(terr.Errors) != 1 || !errors.Is(terr.Errors[0], errRejected) {
		t.Errorf("TransactionError = %+v, want index 1 failed with the index function's error", terr)
	}
	assertStored(t, s, "3", a, c)
}

// testTransactionLastIsTombstone: client-go takes the RV from the last
// object only; a tombstone has none, so the store's RV stays where it was
// before the transaction, not at the RV of an earlier object in it.
func testTransactionLastIsTombstone(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	b := mkPod("ns", "b", "5")
	if err := s.Transaction(add(b), del(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a})); err != nil {
		t.Fatalf("Transaction: %v", err)
	}
	assertStored(t, s, "1", b)
}

func testTransactionEmpty(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	if err := s.Transaction(); err != nil {
		t.Errorf("empty Transaction: %v", err)
	}
	assertStored(t, s, "1", a)
}

// closedTransactionError reports whether terr fails every transaction with
// store.ErrClosed.
func closedTransactionError(terr *cache.TransactionError, n int) bool {
	if terr == nil || len(terr.SuccessfulIndices) != 0 || terr.TotalTransactions != n || len(terr.Errors) == 0 {
		return false
	}
	for _, err := range terr.Errors {
		if !errors.Is(err, store.ErrClosed) {
			return false
		}
	}
	return true
}
