package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store"
)

// relistCase is a store holding keep, change, gone1 and gone2 (RVs 1 to
// 4) and the objects of a relist of it: keep unchanged, changed (change at
// RV 7 with another user), fresh (new, RV 8); gone1 and gone2 vanish.
type relistCase struct {
	keep, change, gone1, gone2 *corev1.Pod
	changed, fresh             *corev1.Pod
}

// newRelistCase stores a relistCase's objects in s.
func newRelistCase(t *testing.T, s store.Store) relistCase {
	t.Helper()
	c := relistCase{
		keep:   mkPod("ns", "keep", "1", users("ernie")),
		change: mkPod("ns", "change", "2"),
		gone1:  mkPod("old", "gone1", "3", users("bert")),
		gone2:  mkPod("ns", "gone2", "4"),
		fresh:  mkPod("new", "fresh", "8", users("elmo")),
	}
	mustAdd(t, s, c.keep, c.change, c.gone1, c.gone2)
	c.changed = withRV(c.change, "7")
	c.changed.Annotations[annotationUsers] = "oscar"
	return c
}

// begin opens a Replace that is aborted when the test ends (a no-op after
// Commit).
func begin(t *testing.T, s store.Store) store.Replace {
	t.Helper()
	r := mustBeginReplace(t, s)
	t.Cleanup(func() {
		if err := r.Abort(); err != nil {
			t.Errorf("Abort at the end of the test: %v", err)
		}
	})
	return r
}

// assertReplaceRefuses checks that r's Add (of ns/late), Vanished and
// Commit return errors wrapping want (when is when they are called).
func assertReplaceRefuses(t testing.TB, r store.Replace, when string, want error) {
	t.Helper()
	ctx := context.Background()
	if err := r.Add(ctx, mkPod("ns", "late", "6")); !errors.Is(err, want) {
		t.Errorf("Replace.Add %s = %v, want %v", when, err, want)
	}
	if err := r.Vanished(ctx, func(string, interface{}) error { return nil }); !errors.Is(err, want) {
		t.Errorf("Replace.Vanished %s = %v, want %v", when, err, want)
	}
	if err := r.Commit(ctx, "7"); !errors.Is(err, want) {
		t.Errorf("Replace.Commit %s = %v, want %v", when, err, want)
	}
}

// scanAll returns the keys and objects scan (Scan, Vanished, byIndex)
// passes, in order; an error fails t, what naming the scan.
func scanAll(t testing.TB, what string, scan func(context.Context, store.ScanFunc) error) (keys []string, objs []interface{}) {
	t.Helper()
	err := scan(context.Background(), func(key string, obj interface{}) error {
		keys = append(keys, key)
		objs = append(objs, obj)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return keys, objs
}

// byIndex is s.ScanIndex of index and value, as scanAll takes it.
func byIndex(s store.Store, index, value string) func(context.Context, store.ScanFunc) error {
	return func(ctx context.Context, fn store.ScanFunc) error { return s.ScanIndex(ctx, index, value, fn) }
}

func testReplacePagedCommit(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	c := newRelistCase(t, s)
	keep, change, gone1, gone2, changed, fresh := c.keep, c.change, c.gone1, c.gone2, c.changed, c.fresh
	s.Bookmark("5")

	r := begin(t, s)
	for i, page := range [][]interface{}{{keep, changed}, {fresh}} {
		if err := r.Add(ctx, page...); err != nil {
			t.Fatalf("Add page %d: %v", i, err)
		}
		// Readers see the old content while the replace is open.
		assertStored(t, s, "5", keep, change, gone1, gone2)
		if keys, err := s.IndexKeys(indexUsers, "bert"); err != nil || !slices.Equal(keys, []string{"old/gone1"}) {
			t.Errorf("IndexKeys(byUser, bert) during replace = %q, %v", keys, err)
		}
		if st, _ := s.State(); st.Complete || st.Objects != 4 {
			t.Errorf("State during replace = %+v", st)
		}
	}

	keys, objs := scanAll(t, "Vanished", r.Vanished)
	if !slices.Equal(keys, []string{"ns/gone2", "old/gone1"}) {
		t.Errorf("Vanished keys = %q, want [ns/gone2 old/gone1] in key order", keys)
	}
	assertObjects(t, "Vanished objects (last stored state)", objs, gone1, gone2)
	assertContent(t, s, keep, change, gone1, gone2)

	if err := r.Commit(ctx, "9"); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	assertStored(t, s, "9", keep, changed, fresh)
	if st, _ := s.State(); !st.Complete || st.Objects != 3 {
		t.Errorf("State after Commit = %+v, want complete with 3 objects", st)
	}
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "ernie", "oscar", "elmo")
	assertKeys(t, "ListIndexFuncValues(namespace)", s.ListIndexFuncValues(indexNamespace), "ns", "new")
}

func testReplaceAbort(t *testing.T, h harness) {
	ctx := context.Background()
	a := mkPod("ns", "a", "1", users("ernie"))
	s := h.open(t, nil, a)
	r := mustBeginReplace(t, s)
	if err := r.Add(ctx, mkPod("ns", "b", "2", users("bert"))); err != nil {
		t.Fatal(err)
	}
	if err := r.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	assertStored(t, s, "1", a)
	if st, _ := s.State(); st.Complete {
		t.Error("an aborted Replace made the store complete")
	}
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "ernie")
	// A new relist may start.
	r2 := mustBeginReplace(t, s)
	if err := r2.Abort(); err != nil {
		t.Fatal(err)
	}
}

func testReplaceInProgress(t *testing.T, h harness) {
	ctx := context.Background()
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	r := mustBeginReplace(t, s)
	if _, err := s.BeginReplace(ctx); !errors.Is(err, store.ErrReplaceInProgress) {
		t.Errorf("second BeginReplace = %v, want ErrReplaceInProgress", err)
	}
	if err := s.Replace([]interface{}{mkPod("ns", "x", "2")}, "2"); !errors.Is(err, store.ErrReplaceInProgress) {
		t.Errorf("Replace while one is open = %v, want ErrReplaceInProgress", err)
	}
	assertContent(t, s, a)
	// The open replace is unharmed.
	b := mkPod("ns", "b", "3")
	if err := r.Add(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	assertContent(t, s, b)
	if err := s.Replace(nil, "4"); err != nil {
		t.Errorf("Replace after Commit: %v", err)
	}
}

func testReplaceDone(t *testing.T, h harness) {
	ctx := context.Background()
	ends := []struct {
		name string
		end  func(store.Replace) error
	}{
		{"Commit", func(r store.Replace) error { return r.Commit(ctx, "5") }},
		{"Abort", func(r store.Replace) error { return r.Abort() }},
	}
	for _, e := range ends {
		t.Run("after "+e.name, func(t *testing.T) {
			s := h.open(t, nil)
			r := mustBeginReplace(t, s)
			if err := e.end(r); err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
			assertReplaceRefuses(t, r, "after "+e.name, store.ErrReplaceDone)
			if e.name == "Commit" {
				if err := r.Abort(); err != nil {
					t.Errorf("Abort after Commit = %v, want nil", err)
				}
			}
			assertAbsent(t, s, "ns/late")
		})
	}
}

func testReplaceAddKeyError(t *testing.T, h harness) {
	ctx := context.Background()
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	r := mustBeginReplace(t, s)
	if err := r.Add(ctx, mkPod("ns", "b", "2"), notAnObject{"x"}); !isKeyError(err) {
		t.Errorf("Replace.Add with an object without metadata = %v, want a cache.KeyError", err)
	}
	if err := r.Abort(); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, "1", a)
}

func testReplaceLastStagedWins(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	r := begin(t, s)
	a1, a2 := mkPod("ns", "a", "1", users("ernie")), mkPod("ns", "a", "2", users("bert"))
	if err := r.Add(ctx, a1); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(ctx, a2); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	assertContent(t, s, a2)
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "bert")
}

func testReplaceEmptyCommit(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	pods := []*corev1.Pod{mkPod("ns", "b", "1"), mkPod("ns", "a", "2")}
	mustAdd(t, s, pods...)
	r := begin(t, s)
	keys, _ := scanAll(t, "Vanished", r.Vanished)
	if !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
		t.Errorf("Vanished with nothing staged = %q, want every key in order", keys)
	}
	if err := r.Commit(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	assertContent(t, s)
	if st, _ := s.State(); st != (store.State{ResourceVersion: "3", Complete: true}) {
		t.Errorf("State = %+v", st)
	}
}

// testReplaceLarge relists realistic pods in pages over a store holding a
// different, overlapping set.
func testReplaceLarge(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	const n, page = 1200, 250
	all := podgen.Pods(n + n/2)
	mustAdd(t, s, all[:n]...)
	r := begin(t, s)
	next := all[n/2:]
	for i := 0; i < len(next); i += page {
		objs := podsToObjects(next[i:min(i+page, len(next))])
		if err := r.Add(ctx, objs...); err != nil {
			t.Fatalf("Add page at %d: %v", i, err)
		}
	}
	leftOut := map[string]*corev1.Pod{}
	for _, p := range all[:n/2] {
		leftOut[keyOf(t, p)] = p
	}
	vanished := 0
	if err := r.Vanished(ctx, func(key string, obj interface{}) error {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("vanished %s is a %T", key, obj)
		}
		want, ok := leftOut[key]
		if !ok || !apiequality.Semantic.DeepEqual(p, want) {
			return fmt.Errorf("vanished %s is not one of the pods left out", key)
		}
		vanished++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if vanished != n/2 {
		t.Errorf("Vanished reported %d objects, want %d", vanished, n/2)
	}
	if err := r.Commit(ctx, "999999"); err != nil {
		t.Fatal(err)
	}
	assertContent(t, s, next...)
}
