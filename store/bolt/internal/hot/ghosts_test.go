package hot

import "testing"

// TestGhostsGrow checks that the ghosts take no memory before the first
// eviction, grow with the evictions up to their size, and remember the
// last size hashes added, oldest first out, across their growth.
func TestGhostsGrow(t *testing.T) {
	var g ghosts
	g.init(200)
	if g.ring != nil {
		t.Fatalf("ring of %d slots before any add, want none", len(g.ring))
	}
	for h := range uint64(1000) {
		g.add(h)
		if want := min(int(h)+1, 200); g.n != want || len(g.ring) > 200 {
			t.Fatalf("after %d adds: %d hashes in a ring of %d, want %d in at most 200", h+1, g.n, len(g.ring), want)
		}
	}
	for h := range uint64(1000) {
		if got, want := g.take(h), h >= 800; got != want {
			t.Fatalf("take(%d) = %v, want %v", h, got, want)
		}
	}

	// Grown part way, in order.
	var small ghosts
	small.init(200)
	for h := range uint64(100) {
		small.add(h)
	}
	if len(small.ring) != 128 {
		t.Fatalf("ring of %d slots after 100 adds, want 128", len(small.ring))
	}
	for h := range uint64(100) {
		if !small.take(h) {
			t.Fatalf("take(%d) after 100 adds: false, want true", h)
		}
	}
}
