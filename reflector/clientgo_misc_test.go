package reflector

// This file ports the remaining tests of client-go's
// tools/cache/reflector_test.go at v0.36.3 that apply to ours: the type
// description and expected GVK of a reflector, Table objects, and
// TestReflectorListExtract. Adapted: client-go's helpers
// (getTypeDescriptionFromObject, getExpectedGVKFromObject,
// isUnsupportedTableObject) are read through New's Options defaults and
// dropUnexpected; TestReflectorListExtract checks with finalizers and the
// garbage collector that a listed object does not keep its whole list
// alive, ours checks directly that no object handed to the Sink points
// into the list's Items array.

import (
	"context"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/warmcache/warmcache/internal/testkit"
)

func TestGetTypeDescriptionFromObject(t *testing.T) {
	obj := &unstructured.Unstructured{}
	gvk := schema.GroupVersionKind{Group: "mygroup", Version: "v1", Kind: "MyKind"}
	obj.SetGroupVersionKind(gvk)

	testCases := map[string]struct {
		inputType               runtime.Object
		expectedTypeDescription string
	}{
		"Nil type":                      {expectedTypeDescription: "<unspecified>"},
		"Normal type":                   {inputType: &corev1.Pod{}, expectedTypeDescription: "*v1.Pod"},
		"Unstructured type without GVK": {inputType: &unstructured.Unstructured{}, expectedTypeDescription: "*unstructured.Unstructured"},
		"Unstructured type with GVK":    {inputType: obj, expectedTypeDescription: gvk.String()},
	}
	for testName, tc := range testCases {
		t.Run(testName, func(t *testing.T) {
			r, err := New(newLW(nil, nil), tc.inputType, newRecorder(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.TypeDescription(); tc.expectedTypeDescription != got {
				t.Fatalf("Expected typeDescription %v, got %v", tc.expectedTypeDescription, got)
			}
		})
	}
}

func TestGetExpectedGVKFromObject(t *testing.T) {
	obj := &unstructured.Unstructured{}
	gvk := schema.GroupVersionKind{Group: "mygroup", Version: "v1", Kind: "MyKind"}
	obj.SetGroupVersionKind(gvk)

	testCases := map[string]struct {
		inputType   runtime.Object
		expectedGVK *schema.GroupVersionKind
	}{
		"Nil type":                      {},
		"Some non Unstructured type":    {inputType: &corev1.Pod{}},
		"Unstructured type without GVK": {inputType: &unstructured.Unstructured{}},
		"Unstructured type with GVK":    {inputType: obj, expectedGVK: &gvk},
	}
	for testName, tc := range testCases {
		t.Run(testName, func(t *testing.T) {
			r, err := New(newLW(nil, nil), tc.inputType, newRecorder(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := r.opts.ExpectedGVK
			gvkNotEqual := (tc.expectedGVK == nil) != (got == nil)
			if tc.expectedGVK != nil && got != nil {
				gvkNotEqual = *tc.expectedGVK != *got
			}
			if gvkNotEqual {
				t.Fatalf("Expected expectedGVK %v, got %v", tc.expectedGVK, got)
			}
		})
	}
}

func TestIsUnsupportedTableObject(t *testing.T) {
	table := func(apiVersion string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": "Table"}}
	}
	tests := []struct {
		name     string
		obj      runtime.Object
		expected bool
	}{
		{"Unsupported Table object in meta.k8s.io/v1beta1", table("meta.k8s.io/v1beta1"), true},
		{"Unsupported Table object in meta.k8s.io/v1", table("meta.k8s.io/v1"), true},
		{"Pod obj is not a Table", &corev1.Pod{}, false},
		{"Table object with unrecognised API group", table("custom.group/v1"), false},
	}
	// No expected type or GVK: only the Table check drops objects.
	r, err := New(newLW(nil, nil), nil, newRecorder(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if result := r.dropUnexpected(context.Background(), tt.obj); result != tt.expected {
				t.Errorf("Expected %v, got %v", tt.expected, result)
			}
		})
	}
}

// pageCapture is a Sink that keeps the objects of every page.
type pageCapture struct {
	*recorder
	objs []interface{}
}

func (p *pageCapture) ReplacePage(ctx context.Context, objs []interface{}) error {
	p.objs = append(p.objs, objs...)
	return p.recorder.ReplacePage(ctx, objs)
}

func TestReflectorListExtract(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var lists []*corev1.PodList
	const pages, perPage = 5, 20
	lw := newLW(
		func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			n := len(lists)
			l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "100"}}
			for i := 0; i < perPage; i++ {
				l.Items = append(l.Items, *testkit.Pod("pod-"+string(rune('a'+n))+string(rune('a'+i)), "1"))
			}
			if n+1 < pages {
				l.Continue = "C" + string(rune('0'+n+1))
			}
			lists = append(lists, l)
			return l, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			cancel()
			return watch.NewFake(), nil
		})
	lw.watchListOff = true
	sink := &pageCapture{recorder: newRecorder()}
	r := newCG(t, lw, sink, nil, Options{ListPageSize: perPage})
	runToEnd(t, r, ctx, cancel)

	if len(sink.objs) != pages*perPage {
		t.Fatalf("%d objects listed, want %d", len(sink.objs), pages*perPage)
	}
	for _, o := range sink.objs {
		p := uintptr(unsafe.Pointer(o.(*corev1.Pod)))
		for _, l := range lists {
			lo := uintptr(unsafe.Pointer(&l.Items[0]))
			hi := lo + uintptr(len(l.Items))*unsafe.Sizeof(l.Items[0])
			if p >= lo && p < hi {
				t.Fatalf("%s points into its list's Items: it keeps the whole list alive", o.(*corev1.Pod).Name)
			}
		}
	}
}
