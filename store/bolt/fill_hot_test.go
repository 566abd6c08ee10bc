package bolt

import (
	"context"
	"testing"
)

// TestFillKeepsHot checks that a fill keeps the objects it writes in the
// hot tier, as a batch does: after the commit a point read returns the
// object the fill was given, without decoding, and the first List finds
// the tier whole and answers with the same objects.
func TestFillKeepsHot(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	f, err := s.BeginFill(ctx)
	must(t, err)
	given := map[string]interface{}{}
	for i := range 2 {
		page := fillPage(i, 10)
		must(t, f.Add(ctx, page...))
		for _, obj := range page {
			key, err := s.key(obj)
			must(t, err)
			given[key] = obj
		}
	}
	must(t, f.Commit(ctx, "50"))
	if n := s.hot.Len(); n != len(given) {
		t.Fatalf("hot tier after the fill: %d objects, want %d", n, len(given))
	}
	for key, want := range given {
		got, ok, err := s.GetByKey(key)
		if err != nil || !ok || got != want {
			t.Fatalf("GetByKey(%s) = %p, %v, %v; want the object filled (%p)", key, got, ok, err, want)
		}
	}
	list := s.List()
	if len(list) != len(given) || !s.hot.IsWhole() {
		t.Fatalf("List: %d objects, tier whole %v; want %d, whole", len(list), s.hot.IsWhole(), len(given))
	}
	for _, obj := range list {
		key, _ := s.key(obj)
		if obj != given[key] {
			t.Fatalf("List: %s is not the object filled", key)
		}
	}

}
