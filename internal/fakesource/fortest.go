package fakesource

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// NewForTest returns a new Source with opts holding objs, added in order
// (so the i-th has resourceVersion i+2). It fails the test (t.Fatal) if
// opts are invalid or an object cannot be added.
func NewForTest(t testing.TB, opts Options, objs ...runtime.Object) *Source {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("fakesource.New: %v", err)
	}
	for _, obj := range objs {
		if _, err := s.Add(obj); err != nil {
			t.Fatalf("fakesource: Add: %v", err)
		}
	}
	return s
}
