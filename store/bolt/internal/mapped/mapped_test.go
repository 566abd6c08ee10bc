package mapped

import (
	"testing"
	"time"
)

// TestUse checks that Touched reports a release due once ReleaseAfter
// bytes are counted, and that Release starts a new count.
func TestUse(t *testing.T) {
	var u Use
	if u.Touched(ReleaseAfter - 1) {
		t.Fatal("a release due below ReleaseAfter bytes")
	}
	if !u.Touched(1) {
		t.Fatal("no release due at ReleaseAfter bytes")
	}
	if !u.Touched(1) {
		t.Fatal("no release due past ReleaseAfter bytes before a Release")
	}
	if err := u.Release(0, 0); err != nil {
		t.Fatalf("Release of nothing: %v", err)
	}
	if u.Touched(ReleaseAfter - 1) {
		t.Fatal("a release due below ReleaseAfter bytes after a Release")
	}
}

// TestReleaseLater checks that ReleaseLater arms one call at a time,
// after ReleaseIdle, which releases only if bytes are still counted, tries
// again while the release cannot run, and that Stop refuses later calls.
func TestReleaseLater(t *testing.T) {
	var armed []func()
	var u Use
	u.afterFunc = func(d time.Duration, f func()) *time.Timer {
		if d != ReleaseIdle {
			t.Errorf("armed for %v, want ReleaseIdle", d)
		}
		armed = append(armed, f)
		return time.NewTimer(time.Hour)
	}
	fire := func() {
		t.Helper()
		if len(armed) == 0 {
			t.Fatal("nothing armed")
		}
		armed[len(armed)-1]()
	}
	released, busy := 0, false
	u.SetRelease(func() bool {
		if busy {
			return false
		}
		released++
		if err := u.Release(0, 0); err != nil {
			t.Fatal(err)
		}
		return true
	})

	u.Touched(10)
	u.ReleaseLater()
	u.ReleaseLater()
	if len(armed) != 1 || !u.Pending() {
		t.Fatalf("%d timers made, pending %v; want 1 pending", len(armed), u.Pending())
	}
	fire()
	if released != 1 || u.Pending() || u.Counted() != 0 {
		t.Fatalf("%d releases, pending %v, %d counted; want 1 release, none pending, 0 counted", released, u.Pending(), u.Counted())
	}

	// Released meanwhile (ReleaseAfter): nothing to do.
	u.Touched(10)
	u.ReleaseLater()
	if !u.Pending() {
		t.Fatal("not pending once the first ran")
	}
	if err := u.Release(0, 0); err != nil {
		t.Fatal(err)
	}
	fire()
	if released != 1 || u.Pending() {
		t.Fatalf("%d releases, pending %v; want none for nothing counted", released, u.Pending())
	}

	// A write keeps the release from running: tried again.
	u.Touched(10)
	u.ReleaseLater()
	busy = true
	fire()
	if released != 1 || !u.Pending() {
		t.Fatalf("%d releases, pending %v; want the release tried again", released, u.Pending())
	}
	busy = false
	fire()
	if released != 2 || u.Pending() {
		t.Fatalf("%d releases, pending %v; want the retry released", released, u.Pending())
	}

	u.Touched(10)
	u.ReleaseLater()
	u.Stop()
	fire()
	if released != 2 {
		t.Fatalf("%d releases, want none from a timer armed before Stop", released)
	}
	u.ReleaseLater()
	if u.Pending() {
		t.Fatal("ReleaseLater armed after Stop")
	}
}
