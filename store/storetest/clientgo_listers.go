package storetest

// Ports client-go's tools/cache/listers_test.go at v0.36.3 (TestListAll),
// and tests client-go's ListAllByNamespace and generic listers, which
// listers_test.go leaves to the generated listers, on the stores.
// Adapted: TestListAll's objects are cluster-scoped pods instead of
// metav1.PartialObjectMetadata (same metadata; a store that encodes
// objects has a codec for pods), and 500 of them instead of 100,000 and
// 1,000,000, to keep the suite fast; the typed listers
// (corelisters.NewPodLister) are tested by the contract suite's
// Indexer/TypedLister.

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

func testCGListAll(t *testing.T, h cgHarness) {
	testCases := []struct {
		name           string
		numObjects     int
		numMatching    int
		matchingLabels map[string]string
		selector       labels.Selector
		expectedCount  int
	}{
		{
			name:           "subset match",
			numObjects:     500,
			numMatching:    50,
			matchingLabels: map[string]string{"match": "true"},
			selector:       labels.SelectorFromSet(map[string]string{"match": "true"}),
			expectedCount:  50,
		},
		{
			name:           "all match",
			numObjects:     500,
			numMatching:    0,
			matchingLabels: map[string]string{},
			selector:       labels.Everything(),
			expectedCount:  500,
		},
		{
			name:           "no match",
			numObjects:     500,
			numMatching:    0,
			matchingLabels: map[string]string{"nomatch": "true"},
			selector:       labels.SelectorFromSet(map[string]string{"match": "true"}),
			expectedCount:  0,
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCreateStore(t, h, tc.numObjects, tc.numMatching, tc.matchingLabels)

			var matchingObjects int
			appendFn := func(obj interface{}) {
				matchingObjects++
			}
			err := cache.ListAll(s, tc.selector, appendFn)
			if err != nil {
				t.Fatalf("ListAll returned an error: %v", err)
			}
			if matchingObjects != tc.expectedCount {
				t.Errorf("ListAll returned %d objects, expected %d", matchingObjects, tc.expectedCount)
			}
		})
	}
}

// mustCreateStore is client-go's: objects keyed by name, the first
// numMatching of them labelled matchingLabels.
func mustCreateStore(t *testing.T, h cgHarness, numObjects, numMatching int, matchingLabels map[string]string) store.Store {
	if numMatching > numObjects {
		t.Fatal("there can not be more matches than objects")
	}
	s := h.open(t, func(obj interface{}) (string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return "", err
		}
		return m.GetName(), nil
	}, nil)
	for i := 0; i < numObjects; i++ {
		obj := cgPod(fmt.Sprintf("obj-%d", i), map[string]string{}, nil)
		if i < numMatching {
			obj.Labels = matchingLabels
		}
		mustDo(t, "Add", s.Add(obj))
	}
	return s
}

// listerPods are namespaced pods for the lister tests: three namespaces,
// labelled by tier.
func listerPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for i, ns := range []string{"ns-a", "ns-b", "ns-c"} {
		for j := 0; j < 4; j++ {
			tier := "backend"
			if j%2 == 0 {
				tier = "frontend"
			}
			pods = append(pods, mkPod(ns, fmt.Sprintf("p%d", j), fmt.Sprint(10*i+j+1), func(p *corev1.Pod) {
				p.Labels["tier"] = tier
			}))
		}
	}
	return pods
}

// testCGListAllByNamespace: client-go's ListAllByNamespace reads a
// namespace through the store's cache.NamespaceIndex, and through List
// when the store has no such index (Index errs); both must select the
// same pods. A namespace lister's probe is a *metav1.ObjectMeta, not an
// object of the store's type.
func testCGListAllByNamespace(t *testing.T, h cgHarness) {
	pods := listerPods()
	stores := []struct {
		name     string
		indexers cache.Indexers
	}{
		{"with namespace index", cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}},
		{"without namespace index", nil},
	}
	sel := func(s string) labels.Selector {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel
	}
	cases := []struct {
		namespace string
		selector  labels.Selector
		want      func(p *corev1.Pod) bool
	}{
		{"ns-b", labels.Everything(), func(p *corev1.Pod) bool { return p.Namespace == "ns-b" }},
		{"ns-b", sel("tier=frontend"), func(p *corev1.Pod) bool { return p.Namespace == "ns-b" && p.Labels["tier"] == "frontend" }},
		{"ns-c", sel("tier in (backend),tier!=frontend"), func(p *corev1.Pod) bool {
			return p.Namespace == "ns-c" && p.Labels["tier"] == "backend"
		}},
		{"ns-b", labels.Nothing(), func(*corev1.Pod) bool { return false }},
		{"missing", labels.Everything(), func(*corev1.Pod) bool { return false }},
		{metav1.NamespaceAll, sel("tier=backend"), func(p *corev1.Pod) bool { return p.Labels["tier"] == "backend" }},
		{metav1.NamespaceAll, labels.Everything(), func(*corev1.Pod) bool { return true }},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := h.open(t, cache.DeletionHandlingMetaNamespaceKeyFunc, st.indexers)
			mustAdd(t, s, pods...)
			for _, tc := range cases {
				var got []interface{}
				if err := cache.ListAllByNamespace(s, tc.namespace, tc.selector, func(obj interface{}) { got = append(got, obj) }); err != nil {
					t.Errorf("ListAllByNamespace(%q, %s): %v", tc.namespace, tc.selector, err)
					continue
				}
				var want []*corev1.Pod
				for _, p := range pods {
					if tc.want(p) {
						want = append(want, p)
					}
				}
				assertObjects(t, fmt.Sprintf("ListAllByNamespace(%q, %s)", tc.namespace, tc.selector), got, want...)
			}
		})
	}
}

// testCGGenericLister: client-go's generic listers (used by dynamic
// informers) on the store: List, ByNamespace(...).List and Get, and the
// NotFound error naming the resource for a missing object.
func testCGGenericLister(t *testing.T, h cgHarness) {
	pods := listerPods()
	s := h.open(t, cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	mustAdd(t, s, pods...)
	gr := schema.GroupResource{Resource: "pods"}
	lister := cache.NewGenericLister(s, gr)

	all, err := lister.List(labels.Everything())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	assertObjects(t, "List(everything)", runtimeToObjects(all), pods...)

	inB, err := lister.ByNamespace("ns-b").List(labels.SelectorFromSet(labels.Set{"tier": "frontend"}))
	if err != nil {
		t.Fatalf("ByNamespace(ns-b).List: %v", err)
	}
	var want []*corev1.Pod
	for _, p := range pods {
		if p.Namespace == "ns-b" && p.Labels["tier"] == "frontend" {
			want = append(want, p)
		}
	}
	assertObjects(t, "ByNamespace(ns-b).List(tier=frontend)", runtimeToObjects(inB), want...)

	got, err := lister.ByNamespace("ns-c").Get("p3")
	if err != nil {
		t.Fatalf("ByNamespace(ns-c).Get(p3): %v", err)
	}
	assertObjects(t, "ByNamespace(ns-c).Get(p3)", []interface{}{got}, pods[11])
	// The cluster-wide Get takes the key itself.
	got, err = lister.Get("ns-a/p0")
	if err != nil {
		t.Fatalf("Get(ns-a/p0): %v", err)
	}
	assertObjects(t, "Get(ns-a/p0)", []interface{}{got}, pods[0])

	for _, get := range []struct {
		name string
		do   func() (runtime.Object, error)
	}{
		{"ByNamespace(ns-a).Get(missing)", func() (runtime.Object, error) { return lister.ByNamespace("ns-a").Get("missing") }},
		{"ByNamespace(ns-x).Get(p0)", func() (runtime.Object, error) { return lister.ByNamespace("ns-x").Get("p0") }},
		{"Get(p0)", func() (runtime.Object, error) { return lister.Get("p0") }},
	} {
		obj, err := get.do()
		if !apierrors.IsNotFound(err) || obj != nil {
			t.Errorf("%s = %v, %v; want NotFound", get.name, obj, err)
			continue
		}
		var status apierrors.APIStatus
		if se, ok := err.(apierrors.APIStatus); ok {
			status = se
		}
		if status == nil || status.Status().Details == nil || status.Status().Details.Kind != gr.Resource {
			t.Errorf("%s: NotFound does not name the resource %q: %v", get.name, gr.Resource, err)
		}
	}
}

func runtimeToObjects(objs []runtime.Object) []interface{} {
	out := make([]interface{}, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}
