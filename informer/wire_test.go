package informer

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt"
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
		p := testkit.Pod(name, rv)
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
		p := testkit.Pod(name, rv)
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

// An update's old object, read from a bolt store, shares with the new
// object the parts the update left alone (the new object's message is
// remembered, as the factory's clients remember it), and so does the old
// object of an update a relist finds (both read from the store); with
// UnsharedOldObjects each is decoded whole. Either way it is the stored
// object, equal to what was listed or updated.
func TestUpdateOldObjectSharesWithTheNew(t *testing.T) {
	decoded := func(t *testing.T, rv, annotation string) *corev1.Pod {
		p := testkit.Pod("p", rv)
		p.Annotations = map[string]string{"a": annotation}
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "img", Args: []string{"x", "y"}}}
		p.Status.Phase = corev1.PodRunning
		msg, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out := &corev1.Pod{}
		if err := out.Unmarshal(msg); err != nil {
			t.Fatal(err)
		}
		wire.Remember(out, msg)
		return out
	}
	for _, unshared := range []bool{false, true} {
		t.Run(fmt.Sprint("UnsharedOldObjects=", unshared), func(t *testing.T) {
			// Without a hot tier, which would hold the objects the
			// informer wrote, so that the relist's old object is read
			// from the file.
			st, closeStore := openBoltWith(t, filepath.Join(t.TempDir(), "cache.db"), bolt.Options{HotBytes: new(int64)}, nil, nil)
			t.Cleanup(closeStore)
			// The mutation detector checks that neither object handed
			// out changes afterwards (invariant 6).
			inf := newTestInformer(t, Options{Store: st, UnsharedOldObjects: unshared, DetectMutations: true})
			rec := &objRecorder{}
			if _, err := inf.AddEventHandler(rec.handler()); err != nil {
				t.Fatal(err)
			}
			h := startHarness(t, inf)
			listed := decoded(t, "10", "listed")
			want := listed.DeepCopy()
			h.relist("10", listed)
			h.must(h.q.Update(h.ctx, decoded(t, "11", "updated")))
			h.waitIdle("11")
			h.waitListenersIdle()
			// The same of an update a relist finds, whose objects are
			// both read from the store.
			h.relist("12", decoded(t, "12", "relisted"))
			h.waitIdle("13")
			h.waitListenersIdle()
			updates := map[string]objEvent{}
			for _, e := range rec.snapshot() {
				if e.kind == "update" {
					updates[e.new.(*corev1.Pod).ResourceVersion] = e
				}
			}
			if len(updates) != 2 {
				t.Fatalf("updates notified: %+v, want one to 11 and one to 12", rec.snapshot())
			}
			for rv, wantOld := range map[string]*corev1.Pod{"11": want, "12": decoded(t, "11", "updated")} {
				update := updates[rv]
				old, updated := update.old.(*corev1.Pod), update.new.(*corev1.Pod)
				if !apiequality.Semantic.DeepEqual(old, wantOld) {
					t.Fatalf("update to %s: old object %+v, want %+v", rv, old, wantOld)
				}
				if updated.Annotations["a"] == wantOld.Annotations["a"] {
					t.Fatalf("update to %s: new object %+v", rv, updated)
				}
				shared := reflect.ValueOf(old.Spec.Containers).Pointer() == reflect.ValueOf(updated.Spec.Containers).Pointer()
				if shared == unshared {
					t.Fatalf("update to %s: old and new share their containers: %v, want %v", rv, shared, !unshared)
				}
			}
		})
	}
}
