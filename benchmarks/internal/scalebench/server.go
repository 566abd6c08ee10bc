package scalebench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
)

// serveChild runs the genserver of spec on a loopback port, writes its URL
// to out and serves until in reaches EOF.
func serveChild(spec childSpec, in io.Reader, out io.Writer) error {
	var resources []genserver.Resource
	switch {
	case spec.Mix > 0:
		resources = MixResources(spec.Mix)
	case spec.Pods > 0:
		resources = []genserver.Resource{genserver.Pods(spec.Pods)}
	default:
		return fmt.Errorf("server: no pods")
	}
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(gone)
	}()
	s, err := genserver.New(resources...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "http://%s\n", ln.Addr()); err != nil {
		return err
	}
	<-gone
	s.Open()
	s.Restart() // ends every watch
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = srv.Close()
	<-errc
	return nil
}
