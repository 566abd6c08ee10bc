// Package mutationtest turns the informer's mutation detector
// (informer.EnvMutationDetector, invariant 6) on for a whole test binary, as
// client-go's tests run theirs, so that a handler, store or wiring that
// mutates a handed-out object fails the tests of the package that brought it.
package mutationtest

import (
	"flag"
	"os"

	"github.com/warmcache/warmcache/informer"
)

// Enable sets informer.EnvMutationDetector to "true" for the test binary
// unless the environment already sets it (either way) or benchmarks run
// (the detector's copies would be measured with them). Call it from
// TestMain before m.Run; it parses the test flags if they are not parsed.
func Enable() {
	if !flag.Parsed() {
		flag.Parse()
	}
	if _, set := os.LookupEnv(informer.EnvMutationDetector); set {
		return
	}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	if err := os.Setenv(informer.EnvMutationDetector, "true"); err != nil {
		panic(err)
	}
}
