package benchmarks

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
)

func TestMain(m *testing.M) {
	// The informer benchmarks start this test binary again as their API
	// server; in that child, MaybeServe serves and exits.
	apiproc.MaybeServe()
	goleak.VerifyTestMain(m)
}
