package factory

import (
	"context"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/handlertest"
	"github.com/warmcache/warmcache/internal/mutationtest"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// TestMain runs every informer of the package's tests with the mutation
// detector on (invariant 6; internal/mutationtest), and stops the
// package's etcd and kube-apiserver (realAPIServer) after the tests.
func TestMain(m *testing.M) {
	mutationtest.Enable()
	goleak.VerifyTestMain(shared.Wrap(m))
}

type event = handlertest.Event

var (
	newRecorder  = handlertest.NewRecorder
	diffMaps     = handlertest.DiffMaps
	sortedEvents = handlertest.SortedEvents
	equalEvents  = func(t *testing.T, got, want []event) { t.Helper(); handlertest.EqualEvents(t, got, want) }
)

// pod returns a pod ns/name at resourceVersion rv.
func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// newSource returns a fake source holding pods ns/<name>.
func newSource(t *testing.T, names ...string) *fakesource.Source {
	t.Helper()
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := src.Add(pod(n, "")); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// serveSource serves the pods of src over HTTP as kube-apiserver does.
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

// nopLW is a ListerWatcher for informers whose reflector never runs.
var nopLW = &cache.ListWatch{}

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// syncAll starts f and waits for every informer to sync.
func syncAll(ctx context.Context, t *testing.T, f *Factory) {
	t.Helper()
	f.Start(ctx)
	for name, ok := range f.WaitForCacheSync(ctx) {
		if !ok {
			t.Fatalf("%s did not sync", name)
		}
	}
}

// withoutSamples returns the resources of res that are not the sample
// objects' (sample.go).
func withoutSamples(res []inspect.ResourceInfo) []inspect.ResourceInfo {
	var out []inspect.ResourceInfo
	for _, r := range res {
		if !IsSample(r.Identity) {
			out = append(out, r)
		}
	}
	return out
}
