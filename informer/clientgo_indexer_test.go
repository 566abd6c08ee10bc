package informer

// Ports of client-go's tools/cache/shared_informer_test.go (TestIndexer,
// TestSharedInformerTransformer) at v0.36.3, run on the memory and the
// bolt store.
//
// Adapted: objects are compared by content (cmp.Diff of the pods, as
// client-go's test does), never by pointer: a bolt store returns decoded
// copies. assert.Eventually is wait.PollUntilContextTimeout.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

func labelKeys(obj interface{}) ([]string, error) {
	res := []string{}
	for k := range obj.(*v1.Pod).Labels {
		res = append(res, k)
	}
	return res, nil
}

func TestClientGoIndexer(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		pod1 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1", Labels: map[string]string{"a": "a-val", "b": "b-val1"}}}
		pod2 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2", Labels: map[string]string{"b": "b-val2"}}}
		pod3 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod3", Labels: map[string]string{"a": "a-val2"}}}
		source.Add(pod1)
		source.Add(pod2)

		informer := newSharedInformer(t, sk, source, time.Second)
		if err := informer.AddIndexers(cache.Indexers{"labels": labelKeys}); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)
		waitDone(t, "informer", informer.HasSyncedChecker())

		cmpOps := cmpopts.SortSlices(func(a, b any) bool {
			return a.(*v1.Pod).Name < b.(*v1.Pod).Name
		})

		// We should be able to lookup by index
		res, err := informer.GetIndexer().ByIndex("labels", "a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]any{pod1}, res); diff != "" {
			t.Fatal(diff)
		}

		// Adding an item later is fine as well
		source.Add(pod3)
		// Event is async, need to poll
		err = wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
			res, _ := informer.GetIndexer().ByIndex("labels", "a")
			return cmp.Diff([]any{pod1, pod3}, res, cmpOps) == "", nil
		})
		if err != nil {
			res, _ := informer.GetIndexer().ByIndex("labels", "a")
			t.Fatalf("pod3 not indexed: %s", cmp.Diff([]any{pod1, pod3}, res, cmpOps))
		}

		// Adding an index later is also fine
		if err := informer.AddIndexers(cache.Indexers{"labels-again": labelKeys}); err != nil {
			t.Fatal(err)
		}

		// Should be immediately available
		res, err = informer.GetIndexer().ByIndex("labels-again", "a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]any{pod1, pod3}, res, cmpOps); diff != "" {
			t.Fatal(diff)
		}
		if got := informer.GetIndexer().ListIndexFuncValues("labels"); !sets.New(got...).Equal(sets.New("a", "b")) {
			t.Fatalf("got %v", got)
		}
		if got := informer.GetIndexer().ListIndexFuncValues("labels-again"); !sets.New(got...).Equal(sets.New("a", "b")) {
			t.Fatalf("got %v", got)
		}
	})
}

func TestClientGoSharedInformerTransformer(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1", UID: "pod1", ResourceVersion: "1"}})
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2", UID: "pod2", ResourceVersion: "2"}})

		informer := newSharedInformer(t, sk, source, time.Second)
		if err := informer.SetTransform(func(obj interface{}) (interface{}, error) {
			if pod, ok := obj.(*v1.Pod); ok {
				name := pod.GetName()
				if upper := strings.ToUpper(name); upper != name {
					pod.SetName(upper)
					return pod, nil
				}
			}
			return obj, nil
		}); err != nil {
			t.Fatal(err)
		}

		listenerTransformer := newTestListener("listenerTransformer", 0, "POD1", "POD2")
		if _, err := informer.AddEventHandler(listenerTransformer); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)

		// The barrier pod is transformed too; listeners recognise it
		// whatever its case.
		b := &barrier{source: source}
		b.ok(t, []*testListener{listenerTransformer})
	})
}
