package bolt

import (
	"errors"
	"testing"
)

// TestParseSyncPolicy checks that every listed name parses to a distinct
// policy, the default first, and that another name is refused.
func TestParseSyncPolicy(t *testing.T) {
	names := SyncPolicyNames()
	seen := map[SyncPolicy]bool{}
	for i, name := range names {
		p, err := ParseSyncPolicy(name)
		if err != nil {
			t.Fatalf("ParseSyncPolicy(%q): %v", name, err)
		}
		if seen[p] {
			t.Errorf("ParseSyncPolicy(%q) = %v, already given for another name", name, p)
		}
		seen[p] = true
		if i == 0 && p != SyncOnClose {
			t.Errorf("first name %q parses to %v, want the default SyncOnClose", name, p)
		}
	}
	if len(seen) != int(UnsafeNoSync)+1 {
		t.Errorf("%d policies have a name, want %d", len(seen), int(UnsafeNoSync)+1)
	}
	if _, err := ParseSyncPolicy("sometimes"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseSyncPolicy(sometimes) = %v, want ErrInvalidOptions", err)
	}
}
