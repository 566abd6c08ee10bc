package filecheck

import (
	"context"
	"errors"
	"os"
	"testing"
)

// CheckTree walks the tree of an open file's read transaction: every page
// reachable from the root, nothing else.
func TestCheckTree(t *testing.T) {
	fx := newFixture(t, fixtureOptions{})
	b := mustRead(t, fx.path)
	leaf := fx.elems(b, fx.branch)[1].child
	tree := Tree{PageSize: fx.pageSize, Root: uint64(fx.rootPage(b)), HWM: uint64(fx.hwm)}
	check := func(t *testing.T, path string, tr Tree, ctx context.Context) error {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return CheckTree(ctx, f, fi.Size(), path, tr)
	}
	ctx := context.Background()
	if err := check(t, fx.path, tree, ctx); err != nil {
		t.Fatalf("CheckTree of a sound file = %v", err)
	}

	for _, id := range []int{leaf, fx.branch, fx.nestedRoot} {
		path := copyFile(t, fx.path)
		edit(t, path, func(b []byte) []byte {
			clear(fx.page(b, id))
			return b
		})
		err := check(t, path, tree, ctx)
		var ce *CorruptionError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Page != int64(id) {
			t.Errorf("CheckTree with page %d zeroed = %v, want ErrCorrupt naming it", id, err)
		}
	}

	bad := []struct {
		name string
		tree Tree
	}{
		{"high water mark past the end", Tree{PageSize: fx.pageSize, Root: tree.Root, HWM: uint64(fx.size/fx.pageSize) + 1}},
		{"root past the high water mark", Tree{PageSize: fx.pageSize, Root: tree.HWM, HWM: tree.HWM}},
		{"page size not a power of two", Tree{PageSize: 3000, Root: tree.Root, HWM: tree.HWM}},
	}
	for _, tc := range bad {
		if err := check(t, fx.path, tc.tree, ctx); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: CheckTree = %v, want ErrCorrupt", tc.name, err)
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := check(t, fx.path, tree, cancelled); !errors.Is(err, context.Canceled) || errors.Is(err, ErrCorrupt) {
		t.Errorf("CheckTree with a cancelled context = %v, want context.Canceled", err)
	}
}

// With SkipTreeWalk, BucketLevels walks the buckets above that level fully
// and reads nothing below it.
func TestCheckBucketLevels(t *testing.T) {
	fx := newFixture(t, fixtureOptions{})
	b := mustRead(t, fx.path)
	// A leaf of bucket "items" (level 1) or "nested/paged" (level 2).
	leaf := fx.elems(b, fx.branch)[1].child
	path := copyFile(t, fx.path)
	edit(t, path, func(b []byte) []byte {
		clear(fx.page(b, leaf))
		return b
	})
	ctx := context.Background()
	for _, tc := range []struct {
		levels int
		walked bool
		want   error
	}{
		{0, false, nil}, // the root bucket's root page only
		{1, false, nil}, // the root pages of "items" and "nested", not their leaves
		{3, false, ErrCorrupt},
	} {
		rep, err := CheckReport(ctx, path, Options{SkipTreeWalk: true, BucketLevels: tc.levels})
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("BucketLevels %d: Check = %v, want %v", tc.levels, err, tc.want)
		}
		if rep.Walked != tc.walked || !rep.Persisted {
			t.Errorf("BucketLevels %d: report %+v, want Walked %v and a persisted freelist", tc.levels, rep, tc.walked)
		}
	}
	if rep, err := CheckReport(ctx, path, Options{}); !errors.Is(err, ErrCorrupt) || !rep.Walked {
		t.Errorf("full Check = %+v, %v; want a walk finding ErrCorrupt", rep, err)
	}
}
