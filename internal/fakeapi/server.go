package fakeapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// Server serves a Handler over HTTP on a loopback port. Its methods are
// safe for concurrent use.
type Server struct {
	// URL is the server's base URL, for example http://127.0.0.1:34567.
	URL     string
	handler *Handler
	srv     *http.Server
	done    chan struct{}
	errMu   sync.Mutex
	err     error
	once    sync.Once
}

// Start serves opts on a new port of 127.0.0.1 until Close. ctx bounds
// the setup only.
func Start(ctx context.Context, opts Options) (*Server, error) {
	h, err := NewHandler(opts)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeapi: listen: %w", err)
	}
	s := &Server{
		URL:     "http://" + ln.Addr().String(),
		handler: h,
		srv:     &http.Server{Handler: h},
		done:    make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errMu.Lock()
			s.err = err
			s.errMu.Unlock()
		}
	}()
	return s, nil
}

// Config returns a client configuration for the server with the given
// content type ("" lets client-go choose: protobuf for built-in types).
// Client-side rate limiting is off (QPS -1), so that paginated lists are
// not throttled.
func (s *Server) Config(contentType string) *rest.Config {
	return &rest.Config{Host: s.URL, ContentConfig: rest.ContentConfig{ContentType: contentType}, QPS: -1}
}

// Close stops the server: it closes the listener and every connection,
// which ends open watches, and returns once every request handler has
// returned; its Handler answers 503 afterwards. It returns the error that
// stopped serving, if any. Closing a closed server does nothing.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.srv.Close()
		<-s.done
		s.handler.shutdown()
	})
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return errors.Join(err, s.err)
}
