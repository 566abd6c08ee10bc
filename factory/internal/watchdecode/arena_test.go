package watchdecode

import (
	"runtime"
	"testing"
	"weak"
)

// TestFreeArenasBounded checks that the free list keeps at most
// maxFreeArenas arenas: one released when it is full is left to the
// collector at once, where a pool would keep it reachable for two more
// cycles (a backlog read ahead releases up to the budget's worth), and
// that one grown past maxPooledArena is never kept.
func TestFreeArenasBounded(t *testing.T) {
	// Fill the free list, then release one more and one grown too large.
	held := make([]*[]byte, 0, maxFreeArenas)
	for range maxFreeArenas {
		held = append(held, getArena())
	}
	for _, a := range held {
		putArena(a)
	}
	if n := len(freeArenas); n != maxFreeArenas {
		t.Fatalf("%d free arenas, want %d", n, maxFreeArenas)
	}
	extra := new([]byte)
	*extra = make([]byte, 0, chunkBytes)
	grown := new([]byte)
	*grown = make([]byte, 0, 2*maxPooledArena)
	wExtra, wGrown := weak.Make(extra), weak.Make(grown)
	putArena(extra)
	putArena(grown)
	extra, grown = nil, nil
	runtime.GC()
	if wExtra.Value() != nil {
		t.Error("an arena released to a full free list is still reachable after a collection")
	}
	if wGrown.Value() != nil {
		t.Error("an arena grown past maxPooledArena is still reachable after a collection")
	}
	// Every arena taken comes back empty and of chunkBytes at least.
	for range maxFreeArenas + 1 {
		a := getArena()
		if len(*a) != 0 || cap(*a) < chunkBytes {
			t.Fatalf("arena of len %d cap %d, want empty of at least %d", len(*a), cap(*a), chunkBytes)
		}
	}
}
