package storetest

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
)

func testAddGetUpdateDelete(t *testing.T, h harness) {
	s := h.open(t, nil)
	a := mkPod("ns1", "a", "10", users("ernie"))
	assertAbsent(t, s, "ns1/a")
	if obj, exists, err := s.Get(a); err != nil || exists || obj != nil {
		t.Errorf("Get on empty store = %v, %v, %v", obj, exists, err)
	}

	mustAdd(t, s, a)
	assertContent(t, s, a)

	a2 := withRV(a, "11")
	a2.Spec.NodeName = "node-2"
	if err := s.Update(a2); err != nil {
		t.Fatalf("Update: %v", err)
	}
	assertContent(t, s, a2)

	// Update of an absent key adds it; Add of a present key replaces it.
	b := mkPod("ns1", "b", "12")
	if err := s.Update(b); err != nil {
		t.Fatalf("Update of absent: %v", err)
	}
	a3 := withRV(a, "13")
	mustAdd(t, s, a3)
	assertContent(t, s, a3, b)

	if err := s.Delete(a3); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertContent(t, s, b)
	assertAbsent(t, s, "ns1/a")

	// Deleting an absent key is not an error; the object given to Delete
	// only needs its key.
	if err := s.Delete(mkPod("ns1", "a", "14")); err != nil {
		t.Errorf("Delete of absent key: %v", err)
	}
	if err := s.Delete(mkPod("ns1", "b", "15")); err != nil {
		t.Errorf("Delete by key with another object: %v", err)
	}
	assertContent(t, s)

	// Cluster-scoped objects are keyed by name alone.
	c := mkPod("", "cluster-scoped", "16")
	mustAdd(t, s, c)
	if _, exists, err := s.GetByKey("cluster-scoped"); err != nil || !exists {
		t.Errorf("GetByKey(cluster-scoped) = %v, %v", exists, err)
	}
}

func testListAndListKeys(t *testing.T, h harness) {
	s := h.open(t, nil)
	if got := s.List(); len(got) != 0 {
		t.Errorf("List on empty store has %d items", len(got))
	}
	if got := s.ListKeys(); len(got) != 0 {
		t.Errorf("ListKeys on empty store = %q", got)
	}
	pods := podgen.Pods(60)
	mustAdd(t, s, pods...)
	assertContent(t, s, pods...)
	for _, p := range pods[:20] {
		if err := s.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	assertContent(t, s, pods[20:]...)
}

func testReplaceSwapsContent(t *testing.T, h harness) {
	s := h.open(t, nil)
	old := []*corev1.Pod{mkPod("old", "a", "1", users("ernie")), mkPod("old", "b", "2"), mkPod("both", "c", "3")}
	mustAdd(t, s, old...)

	c2 := withRV(old[2], "8")
	next := []*corev1.Pod{mkPod("new", "d", "7", users("bert")), c2}
	if err := s.Replace([]interface{}{next[0], next[1]}, "9"); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	assertStored(t, s, "9", next...)
	if got, err := s.ByIndex(indexNamespace, "old"); err != nil || len(got) != 0 {
		t.Errorf("ByIndex(namespace, old) after Replace = %d objects, %v; want none", len(got), err)
	}
	if got, err := s.IndexKeys(indexUsers, "bert"); err != nil || len(got) != 1 || got[0] != "new/d" {
		t.Errorf("IndexKeys(byUser, bert) = %q, %v", got, err)
	}
	assertKeys(t, "ListIndexFuncValues(namespace)", s.ListIndexFuncValues(indexNamespace), "new", "both")
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "bert")

	if err := s.Replace(nil, "10"); err != nil {
		t.Fatalf("Replace with nothing: %v", err)
	}
	assertStored(t, s, "10")
	if got := s.ListIndexFuncValues(indexNamespace); len(got) != 0 {
		t.Errorf("ListIndexFuncValues after emptying Replace = %q", got)
	}
}

func testReplaceKeyError(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	err := s.Replace([]interface{}{mkPod("ns", "b", "2"), notAnObject{"x"}, mkPod("ns", "c", "3")}, "5")
	if !isKeyError(err) {
		t.Fatalf("Replace with an object without metadata = %v, want a cache.KeyError", err)
	}
	assertStored(t, s, "1", a)
	// The failed Replace left no relist open.
	if err := s.Replace([]interface{}{mkPod("ns", "d", "6")}, "6"); err != nil {
		t.Errorf("Replace after a failed one: %v", err)
	}
}

func testKeyErrors(t *testing.T, h harness) {
	bad := []struct {
		name string
		obj  interface{}
	}{
		{"struct without metadata", notAnObject{"x"}},
		{"string", "ns/name"},
		{"nil", nil},
	}
	ops := []struct {
		name string
		do   func(s cache.Indexer, obj interface{}) error
	}{
		{"Add", func(s cache.Indexer, obj interface{}) error { return s.Add(obj) }},
		{"Update", func(s cache.Indexer, obj interface{}) error { return s.Update(obj) }},
		{"Delete", func(s cache.Indexer, obj interface{}) error { return s.Delete(obj) }},
		{"Get", func(s cache.Indexer, obj interface{}) error { _, _, err := s.Get(obj); return err }},
	}
	for _, b := range bad {
		for _, op := range ops {
			t.Run(op.name+"/"+b.name, func(t *testing.T) {
				a := mkPod("ns", "a", "1")
				s := h.open(t, nil, a)
				if err := op.do(s, b.obj); !isKeyError(err) {
					t.Errorf("%s(%#v) = %v, want a cache.KeyError", op.name, b.obj, err)
				}
				assertStored(t, s, "1", a)
			})
		}
	}
}

// testDeleteDeletedFinalStateUnknown: the informer deletes objects whose
// final state it missed with a tombstone. The key comes from the tombstone,
// and, as in client-go, a tombstone has no metadata of its own so the
// store's resourceVersion does not move.
func testDeleteDeletedFinalStateUnknown(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1", users("ernie"))
	b := mkPod("ns", "b", "2")
	s := h.open(t, nil, a, b)
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: withRV(a, "7")}
	if err := s.Delete(tomb); err != nil {
		t.Fatalf("Delete(DeletedFinalStateUnknown): %v", err)
	}
	assertStored(t, s, "2", b)
	if got := s.ListIndexFuncValues(indexUsers); len(got) != 0 {
		t.Errorf("ListIndexFuncValues(byUser) after tombstone delete = %q", got)
	}
	// A tombstone for an absent key is not an error.
	if err := s.Delete(cache.DeletedFinalStateUnknown{Key: "ns/gone"}); err != nil {
		t.Errorf("Delete(tombstone of absent key): %v", err)
	}
}

// testTypedLister: client-go's generated listers work on the store.
func testTypedLister(t *testing.T, h harness) {
	s := h.open(t, nil)
	pods := podgen.Pods(3 * podgen.Namespaces)
	mustAdd(t, s, pods...)
	lister := corelisters.NewPodLister(s)

	ns := pods[1].Namespace
	var inNS, frontendInNS []*corev1.Pod
	for _, p := range pods {
		if p.Namespace == ns {
			inNS = append(inNS, p)
			if p.Labels["tier"] == "frontend" {
				frontendInNS = append(frontendInNS, p)
			}
		}
	}
	got, err := lister.Pods(ns).List(labels.Everything())
	if err != nil {
		t.Fatalf("Pods(%s).List: %v", ns, err)
	}
	assertObjects(t, "Pods(ns).List(everything)", podsToObjects(got), inNS...)

	sel, err := labels.Parse("tier=frontend")
	if err != nil {
		t.Fatal(err)
	}
	got, err = lister.Pods(ns).List(sel)
	if err != nil {
		t.Fatalf("Pods(%s).List(tier=frontend): %v", ns, err)
	}
	assertObjects(t, "Pods(ns).List(tier=frontend)", podsToObjects(got), frontendInNS...)

	all, err := lister.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(pods) {
		t.Errorf("List(everything) = %d pods, want %d", len(all), len(pods))
	}

	p, err := lister.Pods(ns).Get(pods[1].Name)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	assertObjects(t, "Pods(ns).Get", []interface{}{p}, pods[1])
	if _, err := lister.Pods(ns).Get("missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(missing) = %v, want NotFound", err)
	}
	if _, err := lister.Pods("other-ns").Get(pods[1].Name); !apierrors.IsNotFound(err) {
		t.Errorf("Get in the wrong namespace = %v, want NotFound", err)
	}
}

func podsToObjects(pods []*corev1.Pod) []interface{} {
	out := make([]interface{}, len(pods))
	for i, p := range pods {
		out[i] = p
	}
	return out
}

// namePod returns a small pod named by i.
func namePod(ns string, i int, rv string, opts ...podOpt) *corev1.Pod {
	return mkPod(ns, fmt.Sprintf("p%04d", i), rv, opts...)
}
