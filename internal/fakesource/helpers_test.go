package fakesource

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

func mustAdd(t *testing.T, s *Source, obj runtime.Object) string {
	t.Helper()
	rv, err := s.Add(obj)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	return rv
}

func mustUpdate(t *testing.T, s *Source, obj runtime.Object) string {
	t.Helper()
	rv, err := s.Update(obj)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return rv
}

func mustDelete(t *testing.T, s *Source, obj runtime.Object) string {
	t.Helper()
	rv, err := s.Delete(obj)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	return rv
}

func mustWatch(t *testing.T, ep *Endpoint, opts metav1.ListOptions) watch.Interface {
	t.Helper()
	w, err := ep.WatchWithContext(context.Background(), opts)
	if err != nil {
		t.Fatalf("Watch(%+v): %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// recvClosed fails the test unless w's channel closes without another
// event.
func recvClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("got event %s %s, wanted the watch closed", ev.Type, describe(ev.Object))
		}
	case <-time.After(testkit.Timeout()):
		t.Fatalf("watch not closed within %v", testkit.Timeout())
	}
}

// evString renders an event as "TYPE name@rv".
func evString(ev watch.Event) string {
	return string(ev.Type) + " " + describe(ev.Object)
}

func describe(obj runtime.Object) string {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return "?"
	}
	return acc.GetName() + "@" + acc.GetResourceVersion()
}

func rvOf(t *testing.T, obj runtime.Object) string {
	t.Helper()
	acc, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("accessor: %v", err)
	}
	return acc.GetResourceVersion()
}

// names lists the names of a list's items in order.
func names(t *testing.T, list runtime.Object) []string {
	t.Helper()
	objs, err := meta.ExtractList(list)
	if err != nil {
		t.Fatalf("ExtractList: %v", err)
	}
	var out []string
	for _, o := range objs {
		acc, _ := meta.Accessor(o)
		out = append(out, acc.GetName())
	}
	return out
}

func listMeta(t *testing.T, list runtime.Object) (rv, cont string) {
	t.Helper()
	acc, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatalf("ListAccessor: %v", err)
	}
	return acc.GetResourceVersion(), acc.GetContinue()
}

func isConnRefused(err error) bool { return utilnet.IsConnectionRefused(err) }

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	t.Cleanup(cancel)
	return ctx
}
