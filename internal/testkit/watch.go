package testkit

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// Recv returns the next event of w. It fails the test (t.Fatal) if w's
// channel closes first or no event comes within Timeout.
func Recv(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended, wanted an event")
		}
		return ev
	case <-time.After(Timeout()):
		t.Fatalf("no watch event within %v", Timeout())
	}
	return watch.Event{}
}
