package syncflag

import (
	"errors"
	"testing"

	"github.com/warmcache/warmcache/store/bolt"
)

// TestParse checks that every listed name parses to a distinct policy,
// the default first, and that another name is refused.
func TestParse(t *testing.T) {
	seen := map[bolt.SyncPolicy]bool{}
	for i, name := range Names() {
		p, err := Parse(name)
		if err != nil {
			t.Fatalf("Parse(%q): %v", name, err)
		}
		if seen[p] {
			t.Errorf("Parse(%q) = %v, already given for another name", name, p)
		}
		seen[p] = true
		if i == 0 && p != bolt.SyncOnClose {
			t.Errorf("first name %q parses to %v, want the default SyncOnClose", name, p)
		}
	}
	if len(seen) != int(bolt.UnsafeNoSync)+1 {
		t.Errorf("%d policies have a name, want %d", len(seen), int(bolt.UnsafeNoSync)+1)
	}
	if _, err := Parse("sometimes"); !errors.Is(err, bolt.ErrInvalidOptions) {
		t.Errorf("Parse(sometimes) = %v, want ErrInvalidOptions", err)
	}
}

// TestCheckPageSize checks that the page sizes bolt.Open accepts pass and
// that others are refused with bolt.ErrInvalidOptions.
func TestCheckPageSize(t *testing.T) {
	for _, size := range []int{0, bolt.MinPageSize, 4096, 16384, bolt.MaxPageSize} {
		if err := CheckPageSize(size); err != nil {
			t.Errorf("CheckPageSize(%d) = %v, want nil", size, err)
		}
	}
	for _, size := range []int{-4096, 1, bolt.MinPageSize / 2, 3000, bolt.MaxPageSize * 2} {
		if err := CheckPageSize(size); !errors.Is(err, bolt.ErrInvalidOptions) {
			t.Errorf("CheckPageSize(%d) = %v, want bolt.ErrInvalidOptions", size, err)
		}
	}
}
