package bolt

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/wire"
)

// fromWire returns podgen pod i, changed by change, as the factory's
// clients give it: decoded from its message, which is remembered.
func fromWire(t *testing.T, i int, change func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := podgen.Pod(i)
	if change != nil {
		change(p)
	}
	msg, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.Pod
	if err := out.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	wire.Remember(&out, msg)
	return &out
}

// TestReadStatesLikeSharesWithTheNewObject: the old object of an update,
// read with the new one, equals what ReadStates decodes and shares the
// parts the update left alone with the new object; without the new
// object's message it is decoded whole.
func TestReadStatesLikeSharesWithTheNewObject(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, HotBytes: ptrTo[int64](0)})
	s := openPods(t, db, namespaceIndexers())
	const n = 3
	var txns []cache.Transaction
	keys := make([]string, n)
	for i := range n {
		p := fromWire(t, i, nil)
		txns = append(txns, cache.Transaction{Type: cache.TransactionTypeAdd, Object: p})
		keys[i] = p.Namespace + "/" + p.Name
	}
	must(t, s.Apply(context.Background(), txns, "10"))
	updated := make([]*corev1.Pod, n)
	for i := range n {
		updated[i] = fromWire(t, i, func(p *corev1.Pod) {
			p.ResourceVersion = "20"
			p.Annotations = map[string]string{"changed": "yes"}
		})
	}
	wire.Forget(updated[2]) // changed by a transform, say: nothing to share
	plain, err := s.ReadStates(keys, func(int, string) bool { return true })
	must(t, err)
	shared, err := s.ReadStatesLike(keys, func(i int, _ string) (bool, interface{}) { return true, updated[i] })
	must(t, err)
	for i := range n {
		old := shared[i].Obj.(*corev1.Pod)
		if !reflect.DeepEqual(old, plain[i].Obj) || shared[i].RV != plain[i].RV || !shared[i].Exists {
			t.Fatalf("%s: ReadStatesLike read %+v, ReadStates %+v", keys[i], shared[i], plain[i])
		}
		if old.Annotations["changed"] != "" || old.ResourceVersion == "20" {
			t.Fatalf("%s: the old object has the new one's changes", keys[i])
		}
		isShared := reflect.ValueOf(old.Spec.Containers).Pointer() == reflect.ValueOf(updated[i].Spec.Containers).Pointer()
		if want := i < 2; isShared != want {
			t.Errorf("%s: spec shared with the new object: %v, want %v", keys[i], isShared, want)
		}
	}
	// An object not asked for is not read; the like of a key not
	// stored is ignored.
	states, err := s.ReadStatesLike([]string{keys[0], "ns/none"}, func(i int, _ string) (bool, interface{}) { return i == 1, updated[0] })
	must(t, err)
	if states[0].Obj != nil || !states[0].Exists || states[1].Exists || states[1].Obj != nil {
		t.Fatalf("ReadStatesLike = %+v", states)
	}
}
