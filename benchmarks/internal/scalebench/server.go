package scalebench

import (
	"fmt"
	"io"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
)

// serveChild runs the genserver of spec on a loopback port, writes its URL
// to out and serves until in reaches EOF.
func serveChild(spec childSpec, in io.Reader, out io.Writer) error {
	var resources []genserver.Resource
	switch {
	case spec.Mix.Objects > 0:
		if err := spec.Mix.Validate(); err != nil {
			return err
		}
		resources = spec.Mix.Resources()
	case spec.Pods > 0:
		resources = []genserver.Resource{genserver.Pods(spec.Pods)}
	default:
		return fmt.Errorf("server: no pods")
	}
	gone := apiproc.ParentGone(in)
	s, err := genserver.New(resources...)
	if err != nil {
		return err
	}
	// Restart ends every watch, so that the shutdown need not wait.
	return apiproc.ServeLoopback(s, out, gone, func() { s.Open(); s.Restart() })
}
