// Package syncflag parses the bolt flags of the benchmark commands:
// -bolt-sync, the name of a bolt.SyncPolicy, and -bolt-page-size, a
// bolt.Options.PageSize.
package syncflag

import (
	"fmt"
	"strings"

	"github.com/warmcache/warmcache/store/bolt"
)

// names are the names Parse accepts, in the order of Names.
var names = []struct {
	name   string
	policy bolt.SyncPolicy
}{{"onclose", bolt.SyncOnClose}, {"nofreelist", bolt.SyncNoFreelist}, {"full", bolt.SyncFull}, {"unsafe-nosync", bolt.UnsafeNoSync}}

// Names lists the names Parse accepts, the default (bolt.SyncOnClose)
// first, for a flag's help.
func Names() []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n.name
	}
	return out
}

// Parse returns the policy named name: "onclose", "nofreelist", "full" or
// "unsafe-nosync". Another name returns an error wrapping
// bolt.ErrInvalidOptions.
func Parse(name string) (bolt.SyncPolicy, error) {
	for _, n := range names {
		if n.name == name {
			return n.policy, nil
		}
	}
	return 0, fmt.Errorf("%w: sync policy %q: want one of %s", bolt.ErrInvalidOptions, name, strings.Join(Names(), ", "))
}

// CheckPageSize returns an error wrapping bolt.ErrInvalidOptions unless
// size is a valid bolt.Options.PageSize: 0 (the store's default) or a
// power of two from bolt.MinPageSize to bolt.MaxPageSize.
func CheckPageSize(size int) error {
	if size == 0 || size >= bolt.MinPageSize && size <= bolt.MaxPageSize && size&(size-1) == 0 {
		return nil
	}
	return fmt.Errorf("%w: page size %d: want 0 or a power of two from %d to %d", bolt.ErrInvalidOptions, size, bolt.MinPageSize, bolt.MaxPageSize)
}
