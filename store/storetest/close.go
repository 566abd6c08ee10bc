package storetest

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

func testClosedMethods(t *testing.T, h harness) {
	ctx := context.Background()
	a := mkPod("ns", "a", "1", users("ernie"))
	s := h.open(t, nil, a)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	noop := func(string, interface{}) error { return nil }
	calls := []struct {
		name string
		err  func() error
	}{
		{"Add", func() error { return s.Add(mkPod("ns", "b", "2")) }},
		{"Update", func() error { return s.Update(a) }},
		{"Delete", func() error { return s.Delete(a) }},
		{"Get", func() error { _, _, err := s.Get(a); return err }},
		{"GetByKey", func() error { _, _, err := s.GetByKey("ns/a"); return err }},
		{"Replace", func() error { return s.Replace(nil, "3") }},
		{"Index", func() error { _, err := s.Index(indexUsers, a); return err }},
		{"IndexKeys", func() error { _, err := s.IndexKeys(indexUsers, "ernie"); return err }},
		{"ByIndex", func() error { _, err := s.ByIndex(indexUsers, "ernie"); return err }},
		{"AddIndexers", func() error { return s.AddIndexers(cache.Indexers{"new": cache.MetaNamespaceIndexFunc}) }},
		{"Apply", func() error { return s.Apply(ctx, []cache.Transaction{add(a)}, "4") }},
		{"State", func() error { _, err := s.State(); return err }},
		{"BeginReplace", func() error { _, err := s.BeginReplace(ctx); return err }},
		{"Scan", func() error { return s.Scan(ctx, noop) }},
		{"ScanIndex", func() error { return s.ScanIndex(ctx, indexUsers, "ernie", noop) }},
		{"ResourceVersionOf", func() error { _, _, err := s.ResourceVersionOf("ns/a"); return err }},
	}
	for _, c := range calls {
		if err := c.err(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", c.name, err)
		}
	}
	if terr := s.Transaction(add(a), del(a)); !closedTransactionError(terr, 2) {
		t.Errorf("Transaction after Close = %v, want every transaction failed with ErrClosed", terr)
	}
	// Methods without an error result return nothing.
	s.Bookmark("9")
	if got := s.List(); len(got) != 0 {
		t.Errorf("List after Close has %d items", len(got))
	}
	if got := s.ListKeys(); len(got) != 0 {
		t.Errorf("ListKeys after Close = %q", got)
	}
	if got := s.ListIndexFuncValues(indexUsers); len(got) != 0 {
		t.Errorf("ListIndexFuncValues after Close = %q", got)
	}
	if got := s.LastStoreSyncResourceVersion(); got != "" {
		t.Errorf("LastStoreSyncResourceVersion after Close = %q", got)
	}
}

// testCloseWithOpenReplace: Close ends an open relist; its methods then
// report ErrClosed, and Abort, the usual deferred cleanup, is harmless.
func testCloseWithOpenReplace(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	r := mustBeginReplace(t, s)
	if err := r.Add(ctx, mkPod("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close with an open Replace: %v", err)
	}
	assertReplaceRefuses(t, r, "after Close", store.ErrClosed)
	if err := r.Abort(); err != nil {
		t.Errorf("Replace.Abort after Close = %v, want nil", err)
	}
}
