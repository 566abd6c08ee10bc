package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// TestIdentities checks that Identities lists every resource the file
// records, open or not, and none after DropResource deleted it.
func TestIdentities(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	twoResources(t, path)
	db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
	must(t, err)
	names := func() []string {
		t.Helper()
		ids, err := db.Identities(ctx)
		must(t, err)
		var out []string
		for _, id := range ids {
			out = append(out, id.String())
		}
		return out
	}
	want := []string{podsID.String(), otherPodsID.String()}
	slices.Sort(want)
	if got := names(); !slices.Equal(got, want) {
		t.Fatalf("Identities = %q, want %q", got, want)
	}
	if _, err := db.DropResource(ctx, podsID, DropOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{otherPodsID.String()}) {
		t.Fatalf("after dropping %s, Identities = %q", podsID, got)
	}
	must(t, db.Close())
	if _, err := db.Identities(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Identities on a closed DB: %v, want ErrClosed", err)
	}
}
