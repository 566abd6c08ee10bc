package mapped

import "testing"

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
