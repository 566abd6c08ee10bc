package informer

import (
	"net/http/httptest"
	"testing"

	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
)

// serveSource serves the pods of src over HTTP as kube-apiserver does
// (internal/fakeapi), so that informers in other processes, or built on
// client-go's REST clients, can use it.
func serveSource(t *testing.T, src *fakesource.Source) *httptest.Server {
	t.Helper()
	h, err := fakeapi.NewHandler(fakeapi.Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
