// Package syncflag parses the -bolt-sync flag of the benchmark commands:
// the name of a bolt.SyncPolicy.
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
