package informer

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
)

// A handler that (wrongly) changes the resourceVersion of the object it is
// handed must not make the informer drop the object's delete as stale:
// events are compared with the resourceVersion the store recorded. The
// mutation detector reports the mutation.
func TestDeleteAfterHandlerMutatedResourceVersion(t *testing.T) {
	var reports []string
	inf := newTestInformer(t, Options{DetectMutations: true, OnMutation: func(r string) { reports = append(reports, r) }})
	deleted := make(chan string, 1)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			obj.(*corev1.Pod).ResourceVersion = "999" // the bug this test is about
		},
		DeleteFunc: func(obj interface{}) { deleted <- describeObj(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "5"))
	h.waitIdle("11")
	h.must(h.q.Delete(h.ctx, testkit.Pod("a", "12")))
	h.waitIdle("13")
	if keys := inf.GetStore().ListKeys(); len(keys) != 0 {
		t.Fatalf("store holds %v after the delete", keys)
	}
	select {
	case got := <-deleted:
		if got != "ns/a@12" {
			t.Fatalf("handler told of delete %s, want ns/a@12", got)
		}
	default:
		t.Fatal("the handler was not told of the delete")
	}
	h.stop()
	if len(reports) != 1 || !strings.Contains(reports[0], `+  "resourceVersion": "999"`) {
		t.Fatalf("mutation reports %q, want one showing the resourceVersion set to 999", reports)
	}
}
