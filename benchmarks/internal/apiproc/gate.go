package apiproc

import (
	"errors"
	"net/http"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
)

// gate holds back the watch streams of the server: while it is closed,
// writes to watch responses wait.
type gate struct {
	genserver.Gate
}

// errGone is returned by writes whose request ended while they waited.
var errGone = errors.New("apiproc: watch request ended while held back")

// wait returns nil when the gate is open, errGone if done is closed first.
func (g *gate) wait(done <-chan struct{}) error {
	ch := g.Closed()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-done:
		return errGone
	}
}

// wrap returns h with the responses of watch requests held back by the
// gate.
func (g *gate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
			w = &gatedWriter{ResponseWriter: w, g: g, done: r.Context().Done()}
		}
		h.ServeHTTP(w, r)
	})
}

// gatedWriter is a watch response whose writes and flushes wait for the
// gate.
type gatedWriter struct {
	http.ResponseWriter
	g    *gate
	done <-chan struct{} // the request's context's
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if err := w.g.wait(w.done); err != nil {
		return 0, err
	}
	return w.ResponseWriter.Write(p)
}

func (w *gatedWriter) Flush() {
	if w.g.wait(w.done) == nil {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}
