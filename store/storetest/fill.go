package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// openFiller opens a store and returns it as a store.Filler, skipping the
// test for a store without the ability.
func (h harness) openFiller(t *testing.T) (store.Store, store.Filler) {
	t.Helper()
	s := h.open(t, nil)
	f, ok := s.(store.Filler)
	if !ok {
		t.Skipf("%T is not a store.Filler", s)
	}
	return s, f
}

func beginFill(t *testing.T, f store.Filler) store.Fill {
	t.Helper()
	fl, err := f.BeginFill(context.Background())
	if err != nil {
		t.Fatalf("BeginFill: %v", err)
	}
	return fl
}

// wantState checks s's State.
func wantState(t *testing.T, s store.Store, what string, want store.State) {
	t.Helper()
	st, err := s.State()
	if err != nil {
		t.Fatalf("%s: State: %v", what, err)
	}
	if st != want {
		t.Errorf("%s: State = %+v, want %+v", what, st, want)
	}
}

// testFillVisibleAsAdded: each page is readable, by key and by index, as
// soon as its Add returns; the store is incomplete with no
// resourceVersion (even one recorded before the fill) until Commit.
func testFillVisibleAsAdded(t *testing.T, h harness) {
	ctx := context.Background()
	s, f := h.openFiller(t)
	s.Bookmark("5") // an empty store may have a resourceVersion
	fl := beginFill(t, f)
	wantState(t, s, "after BeginFill", store.State{})
	a, b, c := mkPod("ns", "a", "1", users("ernie")), mkPod("ns", "b", "2"), mkPod("other", "c", "3", users("ernie"))
	if err := fl.Add(ctx, b, a); err != nil {
		t.Fatalf("Add: %v", err)
	}
	wantState(t, s, "after the first page", store.State{Objects: 2})
	got, ok, err := s.GetByKey("ns/a")
	if err != nil || !ok || !apiequality.Semantic.DeepEqual(got, a) {
		t.Errorf("GetByKey(ns/a) after its page = %v, %v, %v", got, ok, err)
	}
	if err := fl.Add(ctx, c); err != nil {
		t.Fatalf("Add: %v", err)
	}
	keys, err := s.IndexKeys(indexUsers, "ernie")
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"ns/a", "other/c"}) {
		t.Errorf("IndexKeys(users, ernie) = %v, %v, want ns/a and other/c", keys, err)
	}
	wantState(t, s, "before Commit", store.State{Objects: 3})
	if err := fl.Commit(ctx, "10"); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	wantState(t, s, "after Commit", store.State{ResourceVersion: "10", Complete: true, Objects: 3})
	if err := fl.Add(ctx, mkPod("ns", "d", "4")); !errors.Is(err, store.ErrReplaceDone) {
		t.Errorf("Add after Commit = %v, want ErrReplaceDone", err)
	}
	if err := fl.Abort(); err != nil {
		t.Errorf("Abort after Commit = %v", err)
	}
	wantState(t, s, "after Abort after Commit", store.State{ResourceVersion: "10", Complete: true, Objects: 3})
}

// testFillRefusals: a fill needs an empty store and no open Replace, and
// excludes Replaces and other fills while it is open.
func testFillRefusals(t *testing.T, h harness) {
	ctx := context.Background()
	s, f := h.openFiller(t)
	r := begin(t, s)
	if _, err := f.BeginFill(ctx); !errors.Is(err, store.ErrReplaceInProgress) {
		t.Errorf("BeginFill with a Replace open = %v, want ErrReplaceInProgress", err)
	}
	if err := r.Abort(); err != nil {
		t.Fatal(err)
	}
	fl := beginFill(t, f)
	if _, err := f.BeginFill(ctx); !errors.Is(err, store.ErrReplaceInProgress) {
		t.Errorf("BeginFill with a fill open = %v, want ErrReplaceInProgress", err)
	}
	if _, err := s.BeginReplace(ctx); !errors.Is(err, store.ErrReplaceInProgress) {
		t.Errorf("BeginReplace with a fill open = %v, want ErrReplaceInProgress", err)
	}
	// As during a Replace: the pages written so far were indexed with
	// the fill's indexers.
	if err := s.AddIndexers(cache.Indexers{"late": cache.MetaNamespaceIndexFunc}); !errors.Is(err, store.ErrReplaceInProgress) {
		t.Errorf("AddIndexers with a fill open = %v, want ErrReplaceInProgress", err)
	}
	if err := fl.Add(ctx, mkPod("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	if err := fl.Commit(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.BeginFill(ctx); !errors.Is(err, store.ErrNotEmpty) {
		t.Errorf("BeginFill of a store holding objects = %v, want ErrNotEmpty", err)
	}
}

// testFillAbortKeepsContent: an aborted fill leaves its objects as the
// content, incomplete and without a resourceVersion; the Replace that
// follows diffs against them and its Commit makes the store complete.
func testFillAbortKeepsContent(t *testing.T, h harness) {
	ctx := context.Background()
	s, f := h.openFiller(t)
	fl := beginFill(t, f)
	same, change, gone := mkPod("ns", "same", "1"), mkPod("ns", "change", "2"), mkPod("ns", "gone", "3")
	if err := fl.Add(ctx, same, change); err != nil {
		t.Fatal(err)
	}
	if err := fl.Add(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := fl.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := fl.Commit(ctx, "9"); !errors.Is(err, store.ErrReplaceDone) {
		t.Errorf("Commit after Abort = %v, want ErrReplaceDone", err)
	}
	wantState(t, s, "after Abort", store.State{Objects: 3})
	r := begin(t, s)
	if err := r.Add(ctx, mkPod("ns", "same", "1"), withRV(change, "7"), mkPod("ns", "new", "8")); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, "10"); err != nil {
		t.Fatal(err)
	}
	got := changes(t, r)
	want := []string{"update ns/change 2 7", "delete ns/gone 3", "add ns/new 8"}
	if !slices.Equal(got, want) {
		t.Errorf("Changes after an aborted fill = %q, want %q", got, want)
	}
	if err := r.Release(); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "after the Replace", store.State{ResourceVersion: "10", Complete: true, Objects: 3})
}

// testFillFailedAddWritesNothing: an index function error writes none of
// the page and leaves the fill open.
func testFillFailedAddWritesNothing(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, pickyIndexers())
	f, ok := s.(store.Filler)
	if !ok {
		t.Skipf("%T is not a store.Filler", s)
	}
	fl := beginFill(t, f)
	if err := fl.Add(ctx, mkPod("ns", "a", "1"), mkPod("ns", "b", "2", rejected())); !errors.Is(err, store.ErrIndexFunc) {
		t.Fatalf("Add with a rejected pod = %v, want ErrIndexFunc", err)
	}
	wantState(t, s, "after the failed Add", store.State{})
	if err := fl.Add(ctx, mkPod("ns", "a", "1")); err != nil {
		t.Fatalf("Add after a failed one: %v", err)
	}
	if err := fl.Commit(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "after Commit", store.State{ResourceVersion: "3", Complete: true, Objects: 1})
}
