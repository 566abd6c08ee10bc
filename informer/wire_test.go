package informer

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/store/wire"
)

// A transform changes the object after it was decoded: the store must
// write the transformed object, not the message it was decoded from
// (package store/wire), in a relist and in a watch event alike.
func TestTransformedObjectsAreStoredAsTransformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	st, closeStore := openBolt(t, path, nil, nil)
	inf := newTestInformer(t, Options{Store: st})
	if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
		obj.(*corev1.Pod).Labels = map[string]string{"transformed": "yes"}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)

	// decoded returns a pod as the factory's decoder leaves it: with the
	// message it arrived in remembered.
	decoded := func(name, rv string) *corev1.Pod {
		p := pod(name, rv)
		msg, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		wire.Remember(p, msg)
		return p
	}
	h.relist("10", decoded("listed", "10"))
	h.must(h.q.Add(h.ctx, decoded("watched", "11")))
	h.waitIdle("11")
	h.stop()
	closeStore()

	// Read the file again: the store's cache of decoded objects holds the
	// objects it wrote, whatever bytes it wrote for them.
	st, closeStore = openBolt(t, path, nil, nil)
	t.Cleanup(closeStore)
	for _, name := range []string{"listed", "watched"} {
		obj, ok, err := st.GetByKey("ns/" + name)
		if err != nil || !ok {
			t.Fatalf("GetByKey(%s) = %v, %v", name, ok, err)
		}
		if got := obj.(*corev1.Pod).Labels["transformed"]; got != "yes" {
			t.Errorf("stored %s has labels %v; want the transform's", name, obj.(*corev1.Pod).Labels)
		}
	}
}

// A memory store does not encode: the informer forgets the messages of
// each batch it handled, so that none stays alive as long as its object.
func TestHandledObjectsKeepNoWireMessage(t *testing.T) {
	inf := newTestInformer(t, Options{})
	h := startHarness(t, inf)
	remembered := func(name, rv string) *corev1.Pod {
		p := pod(name, rv)
		wire.Remember(p, []byte("message"))
		return p
	}
	listed, watched, deleted := remembered("listed", "10"), remembered("watched", "11"), remembered("listed", "12")
	h.relist("10", listed)
	h.must(h.q.Add(h.ctx, watched))
	h.must(h.q.Delete(h.ctx, deleted))
	h.waitIdle("12")
	for _, p := range []*corev1.Pod{listed, watched, deleted} {
		if _, ok := wire.Take(p); ok {
			t.Errorf("the message of %s (resourceVersion %s) is still remembered after its batch was handled", p.Name, p.ResourceVersion)
		}
	}
}
