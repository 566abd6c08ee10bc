package headroom

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

const mib = 1 << 20

// withGC sets GOGC and the memory limit for one test and restores them.
func withGC(t *testing.T, percent int, limit int64) {
	t.Helper()
	prevPercent := debug.SetGCPercent(percent)
	prevLimit := debug.SetMemoryLimit(limit)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
}

func heapGoal() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func TestLendRaisesTheHeapGoalUntilReleased(t *testing.T) {
	withGC(t, 100, math.MaxInt64)
	before := heapGoal()
	release := Lend(64 * mib)
	during := heapGoal()
	// At GOGC=100 the goal is twice the live heap: the ballast counts once
	// as live and once as the room it gives.
	if during < before+64*mib {
		t.Fatalf("heap goal with a 64 MiB lend: %d MiB, before %d MiB; want at least 64 MiB more", during/mib, before/mib)
	}
	release()
	release() // a second release is harmless
	after := heapGoal()
	if after > during-64*mib {
		t.Fatalf("heap goal after the release: %d MiB, during the lend %d MiB; want at least 64 MiB less", after/mib, during/mib)
	}
	if got := Size(); got != 0 {
		t.Fatalf("ballast after the release: %d bytes, want none", got)
	}
}

func TestOverlappingLendsShareTheLargest(t *testing.T) {
	withGC(t, 100, math.MaxInt64)
	small := Lend(8 * mib)
	if got := Size(); got != 8*mib {
		t.Fatalf("ballast with an 8 MiB lend: %d, want %d", got, 8*mib)
	}
	large := Lend(16 * mib)
	if got := Size(); got != 16*mib {
		t.Fatalf("ballast with 8 and 16 MiB lends: %d, want %d (the largest, not the sum)", got, 16*mib)
	}
	large()
	if got := Size(); got < 8*mib {
		t.Fatalf("ballast with the 8 MiB lend still open: %d, want at least %d", got, 8*mib)
	}
	small()
	if got := Size(); got != 0 {
		t.Fatalf("ballast after every release: %d, want none", got)
	}
}

func TestLendFitsTheMemoryLimit(t *testing.T) {
	withGC(t, 100, 160*mib)
	release := Lend(64 * mib)
	defer release()
	if got := Size(); got != 10*mib {
		t.Fatalf("ballast of a 64 MiB lend under a 160 MiB memory limit: %d, want %d (a sixteenth of the limit)", got, 10*mib)
	}
}

func TestNoLendWithTheCollectorOff(t *testing.T) {
	withGC(t, -1, math.MaxInt64)
	release := Lend(64 * mib)
	defer release()
	if got := Size(); got != 0 {
		t.Fatalf("ballast with GOGC=off: %d, want none", got)
	}
}

func TestLendOfNothing(t *testing.T) {
	withGC(t, 100, math.MaxInt64)
	Lend(0)()
	Lend(-1)()
	if got := Size(); got != 0 {
		t.Fatalf("ballast after empty lends: %d, want none", got)
	}
}
