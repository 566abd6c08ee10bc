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

// TestReleaseLater checks that ReleaseLater arms one call at a time, after
// ReleaseIdle, which releases only if bytes are still counted.
func TestReleaseLater(t *testing.T) {
	var armed []func()
	afterFunc = func(d time.Duration, f func()) *time.Timer {
		if d != ReleaseIdle {
			t.Errorf("armed for %v, want ReleaseIdle", d)
		}
		armed = append(armed, f)
		return time.NewTimer(time.Hour)
	}
	defer func() { afterFunc = time.AfterFunc }()
	var u Use
	released := 0
	release := func() {
		released++
		if err := u.Release(0, 0); err != nil {
			t.Fatal(err)
		}
	}

	u.Touched(10)
	u.ReleaseLater(release)
	u.ReleaseLater(release)
	if len(armed) != 1 {
		t.Fatalf("%d calls armed, want 1 while one is pending", len(armed))
	}
	armed[0]()
	if released != 1 {
		t.Fatalf("%d releases once the bytes counted waited ReleaseIdle, want 1", released)
	}

	u.Touched(10)
	u.ReleaseLater(release)
	if len(armed) != 2 {
		t.Fatalf("%d calls armed, want a second once the first ran", len(armed))
	}
	if err := u.Release(0, 0); err != nil { // released meanwhile (ReleaseAfter)
		t.Fatal(err)
	}
	armed[1]()
	if released != 1 {
		t.Fatalf("%d releases, want none for nothing counted", released)
	}
	u.Stop()
}
