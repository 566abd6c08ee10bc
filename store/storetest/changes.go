package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/warmcache/warmcache/store"
)

// change is a Change as a comparable string: "add key rv", "update key
// oldRV newRV" or "delete key rv".
func changeString(c store.Change) string {
	switch {
	case c.Old == nil:
		return fmt.Sprintf("add %s %s", c.Key, rvString(c.New))
	case c.New == nil:
		return fmt.Sprintf("delete %s %s", c.Key, rvString(c.Old))
	}
	return fmt.Sprintf("update %s %s %s", c.Key, rvString(c.Old), rvString(c.New))
}

// changes collects r's Changes as strings. When r is a
// store.SharedChanges, its ChangesShared must tell the same changes, with
// equal objects.
func changes(t *testing.T, r store.Replace) []string {
	t.Helper()
	var got []string
	var all []store.Change
	if err := r.Changes(context.Background(), func(c store.Change) error {
		got = append(got, changeString(c))
		all = append(all, c)
		return nil
	}); err != nil {
		t.Fatalf("Changes: %v", err)
	}
	if sc, ok := r.(store.SharedChanges); ok {
		var shared []store.Change
		if err := sc.ChangesShared(context.Background(), func(c store.Change) error {
			shared = append(shared, c)
			return nil
		}); err != nil {
			t.Fatalf("ChangesShared: %v", err)
		}
		if len(shared) != len(all) {
			t.Fatalf("ChangesShared told %d changes, Changes %d", len(shared), len(all))
		}
		for i := range all {
			if shared[i].Key != all[i].Key || !apiequality.Semantic.DeepEqual(shared[i].Old, all[i].Old) || !apiequality.Semantic.DeepEqual(shared[i].New, all[i].New) {
				t.Fatalf("change %d: ChangesShared told %+v, Changes %+v", i, shared[i], all[i])
			}
		}
	}
	return got
}

func testChangesAfterCommit(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	c := newRelistCase(t, s)
	keep, change, gone1, gone2, changed, fresh := c.keep, c.change, c.gone1, c.gone2, c.changed, c.fresh

	r := begin(t, s)
	if err := r.Add(ctx, keep, changed, fresh); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, "9"); err != nil {
		t.Fatal(err)
	}
	// Readers see the new content while the old one is retained.
	assertStored(t, s, "9", keep, changed, fresh)
	if st, _ := s.State(); !st.Complete || st.Objects != 3 {
		t.Errorf("State after Commit = %+v, want complete with 3 objects", st)
	}
	want := []string{"add new/fresh 8", "update ns/change 2 7", "delete ns/gone2 4", "delete old/gone1 3"}
	var objs []store.Change
	if err := r.Changes(ctx, func(c store.Change) error {
		objs = append(objs, c)
		// fn may read the store.
		if _, _, err := s.GetByKey(c.Key); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("Changes: %v", err)
	}
	got := make([]string, len(objs))
	for i, c := range objs {
		got[i] = changeString(c)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Changes = %q, want %q", got, want)
	}
	// Objects are whole: the old state of an update and of a deletion,
	// the new state of an add and an update.
	for _, p := range []struct {
		got, want interface{}
	}{{objs[0].New, fresh}, {objs[1].Old, change}, {objs[1].New, changed}, {objs[2].Old, gone2}, {objs[3].Old, gone1}} {
		if !apiequality.Semantic.DeepEqual(p.got, p.want) {
			t.Errorf("Changes object %s differs from the one stored", keyOf(t, p.want))
		}
	}
	// Changes may be read again until Release.
	if again := changes(t, r); !slices.Equal(again, want) {
		t.Errorf("second Changes = %q, want %q", again, want)
	}
	if err := r.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	assertStored(t, s, "9", keep, changed, fresh)
}

func testChangesNotCommitted(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil, mkPod("ns", "a", "1"))
	r := begin(t, s)
	if err := r.Add(ctx, mkPod("ns", "b", "2")); err != nil {
		t.Fatal(err)
	}
	noop := func(store.Change) error { return nil }
	if err := r.Changes(ctx, noop); !errors.Is(err, store.ErrReplaceDone) {
		t.Errorf("Changes before Commit = %v, want ErrReplaceDone", err)
	}
	// Release before Commit is a no-op: the replace is still open.
	if err := r.Release(); err != nil {
		t.Errorf("Release before Commit = %v", err)
	}
	if err := r.Commit(ctx, "3"); err != nil {
		t.Fatalf("Commit after an early Release: %v", err)
	}
	if got := changes(t, r); !slices.Equal(got, []string{"delete ns/a 1", "add ns/b 2"}) {
		t.Errorf("Changes = %q", got)
	}
}

// testChangesReleased covers the ways the retained content is released:
// Release, Abort after Commit, the next BeginReplace and cache.Store's
// Replace.
func testChangesReleased(t *testing.T, h harness) {
	ctx := context.Background()
	ends := []struct {
		name string
		end  func(s store.Store, r store.Replace) error
	}{
		{"Release", func(_ store.Store, r store.Replace) error { return r.Release() }},
		{"Abort", func(_ store.Store, r store.Replace) error { return r.Abort() }},
		{"BeginReplace", func(s store.Store, _ store.Replace) error {
			r2, err := s.BeginReplace(ctx)
			if err != nil {
				return err
			}
			return r2.Abort()
		}},
		{"cache.Store Replace", func(s store.Store, _ store.Replace) error {
			return s.Replace([]interface{}{mkPod("ns", "b", "2")}, "4")
		}},
	}
	for _, e := range ends {
		t.Run(e.name, func(t *testing.T) {
			s := h.open(t, nil, mkPod("ns", "a", "1"))
			r := begin(t, s)
			b := mkPod("ns", "b", "2")
			if err := r.Add(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := r.Commit(ctx, "3"); err != nil {
				t.Fatal(err)
			}
			if err := e.end(s, r); err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
			if err := r.Changes(ctx, func(store.Change) error { return nil }); !errors.Is(err, store.ErrReplaceDone) {
				t.Errorf("Changes after %s = %v, want ErrReplaceDone", e.name, err)
			}
			for _, end := range []func() error{r.Release, r.Abort} {
				if err := end(); err != nil {
					t.Errorf("Release or Abort after %s = %v, want nil", e.name, err)
				}
			}
			assertContent(t, s, b)
		})
	}
}

// testChangesChunks relists more objects than a chunk holds, with keys
// added, changed, unchanged and vanished spread over the key space.
func testChangesChunks(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	const n = 2000
	name := func(i int) string { return fmt.Sprintf("p-%05d", i) }
	for i := range n {
		if i%5 != 4 { // every fifth key is added by the relist
			mustAdd(t, s, mkPod("ns", name(i), strconv.Itoa(10+i)))
		}
	}
	r := begin(t, s)
	var want []string
	page := make([]interface{}, 0, 300)
	for i := range n {
		key := "ns/" + name(i)
		switch i % 5 {
		case 0: // unchanged
			page = append(page, mkPod("ns", name(i), strconv.Itoa(10+i)))
		case 1, 2: // changed
			page = append(page, mkPod("ns", name(i), strconv.Itoa(100000+i)))
			want = append(want, fmt.Sprintf("update %s %d %d", key, 10+i, 100000+i))
		case 3: // vanished
			want = append(want, fmt.Sprintf("delete %s %d", key, 10+i))
		case 4: // added
			page = append(page, mkPod("ns", name(i), strconv.Itoa(100000+i)))
			want = append(want, fmt.Sprintf("add %s %d", key, 100000+i))
		}
		if len(page) == cap(page) || i == n-1 {
			if err := r.Add(ctx, page...); err != nil {
				t.Fatal(err)
			}
			page = page[:0]
		}
	}
	if err := r.Commit(ctx, "200000"); err != nil {
		t.Fatal(err)
	}
	if got := changes(t, r); !slices.Equal(got, want) {
		t.Errorf("Changes: %d changes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if err := r.Release(); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State(); st.Objects != n/5*4 {
		t.Errorf("State after the relist = %+v, want %d objects", st, n/5*4)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func testChangesFuncError(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil, mkPod("ns", "a", "1"), mkPod("ns", "b", "2"))
	r := begin(t, s)
	if err := r.Commit(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	err := r.Changes(ctx, func(store.Change) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Changes with a failing fn = %v after %d calls, want the fn's error after 1", err, calls)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Changes(cancelled, func(store.Change) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Changes with a cancelled context = %v", err)
	}
	// The retained content is unharmed.
	if got := changes(t, r); !slices.Equal(got, []string{"delete ns/a 1", "delete ns/b 2"}) {
		t.Errorf("Changes = %q", got)
	}
}

func testChangesClosed(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil, mkPod("ns", "a", "1"))
	r := begin(t, s)
	if err := r.Commit(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Changes(ctx, func(store.Change) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Changes after Close = %v, want ErrClosed", err)
	}
	if err := r.Release(); err != nil {
		t.Errorf("Release after Close = %v", err)
	}
}
