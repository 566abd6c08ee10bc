package fakeapi

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/podgen"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testPods is the number of podgen pods the tests start with: more than
// one page of 10 and more than podgen's namespaces.
const testPods = 60

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// contentTypes are the encodings every client test runs with.
var contentTypes = []struct {
	name        string
	contentType string
	// wantList and wantWatch are the Content-Type of list and watch
	// responses.
	wantList, wantWatch string
}{
	{"protobuf", "application/vnd.kubernetes.protobuf",
		"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch"},
	{"json", "application/json", "application/json", "application/json"},
}

func newSource(t *testing.T, n int) *fakesource.Source {
	t.Helper()
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := src.Add(podgen.Pod(i)); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// contentTypeRecorder records the Content-Type of every response.
type contentTypeRecorder struct {
	mu    sync.Mutex
	types map[string]bool
}

func (c *contentTypeRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil {
			c.mu.Lock()
			if c.types == nil {
				c.types = map[string]bool{}
			}
			c.types[resp.Header.Get("Content-Type")] = true
			c.mu.Unlock()
		}
		return resp, err
	})
}

func (c *contentTypeRecorder) saw(ct string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.types[ct]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// clientset returns a clientset for s with contentType, recording the
// content types of responses in rec (if not nil).
func clientset(t *testing.T, s *Server, contentType string, rec *contentTypeRecorder) *kubernetes.Clientset {
	t.Helper()
	cfg := s.Config(contentType)
	if rec != nil {
		cfg.WrapTransport = rec.wrap
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
