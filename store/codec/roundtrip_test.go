package codec_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/store/codec"
)

// TestRoundTripAllKinds fills every kind of client-go's scheme with
// apimachinery's API fuzzer and checks that each codec brings it back
// semantically equal, TypeMeta included, for the three ways TypeMeta is
// found on objects: empty (client-go's protobuf lists and watches), set to
// the kind (JSON responses), and set to something else. The object is also
// converted to unstructured and round-tripped through Unstructured.
func TestRoundTripAllKinds(t *testing.T) {
	iterations := 6
	if testing.Short() {
		iterations = 2
	}
	seed := testSeed(t)
	f := newFuzzer(seed)
	typed := []codec.Codec{codec.Protobuf(scheme.Scheme), codec.JSON(scheme.Scheme)}
	u := codec.Unstructured()
	kinds := externalKinds()
	if len(kinds) < 500 {
		t.Fatalf("client-go's scheme has %d external kinds, expected hundreds", len(kinds))
	}
	// TypeMeta strings that are neither empty nor the kind, recorded
	// literally; the kinds take turns with them.
	literals := []string{"a/b/c", "other.example/v0", ""}
	for k, gvk := range kinds {
		t.Run(kindName(gvk), func(t *testing.T) {
			for i := range iterations {
				obj, err := scheme.Scheme.New(gvk)
				if err != nil {
					t.Fatal(err)
				}
				f.Fill(obj)
				switch i % 3 {
				case 0:
					obj.GetObjectKind().SetGroupVersionKind(gvk)
				case 1:
					// Neither empty nor the kind: recorded literally.
					setTypeMeta(obj, literals[(k+i/3)%len(literals)], gvk.Kind+"X")
				case 2:
					// The fuzzer leaves TypeMeta empty.
				}
				for _, c := range typed {
					checkRoundTrip(t, c, obj)
				}
				content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
				if err != nil {
					t.Fatalf("ToUnstructured: %v", err)
				}
				checkRoundTrip(t, u, &unstructured.Unstructured{Object: content})
			}
		})
	}
}

// setTypeMeta sets obj's TypeMeta to exactly these strings. Objects without
// a TypeMeta (WatchEvent) are left alone.
func setTypeMeta(obj runtime.Object, apiVersion, kind string) {
	if tm, ok := obj.GetObjectKind().(*metav1.TypeMeta); ok {
		tm.APIVersion, tm.Kind = apiVersion, kind
	}
}
