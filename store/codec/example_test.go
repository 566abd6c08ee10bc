package codec_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/store/codec"
)

func ExampleProtobuf() {
	c := codec.Protobuf(scheme.Scheme)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}}

	data, err := c.Encode(nil, pod) // appends to the slice given; nil allocates
	if err != nil {
		panic(err)
	}
	obj, err := c.Decode(data) // data may be reused or unmapped afterwards
	if err != nil {
		panic(err)
	}
	decoded := obj.(*corev1.Pod)
	fmt.Printf("%s %s/%s, TypeMeta %q\n", c.Name(), decoded.Namespace, decoded.Name, decoded.APIVersion)
	// Output: protobuf default/web-0, TypeMeta ""
}

func ExampleFor() {
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "example.com", Version: "v1", Kind: "Widget"}, // not in the scheme: a CRD
	} {
		c, err := codec.For(scheme.Scheme, gvk)
		if err != nil {
			panic(err)
		}
		fmt.Println(gvk.Kind, c.Name())
	}
	// Output:
	// Deployment protobuf
	// Widget unstructured-cbor
}

func ExampleUnstructured() {
	c := codec.Unstructured()
	widget := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]interface{}{"name": "w"},
		"spec":       map[string]interface{}{"replicas": int64(3), "ratio": float64(2)},
	}}
	data, err := c.Encode(nil, widget)
	if err != nil {
		panic(err)
	}
	obj, err := c.Decode(data)
	if err != nil {
		panic(err)
	}
	spec := obj.(*unstructured.Unstructured).Object["spec"].(map[string]interface{})
	fmt.Printf("replicas %T, ratio %T\n", spec["replicas"], spec["ratio"])

	_, err = c.Encode(nil, &unstructured.Unstructured{Object: map[string]interface{}{"n": 3}})
	fmt.Println(err)
	// Output:
	// replicas int64, ratio float64
	// unsupported type: unstructured-cbor encode object: content."n": value of type int is not one of nil, bool, int64, float64, string, []interface{}, map[string]interface{}
}

func ExampleByName() {
	// A store records c.Name() in its file and reopens it with ByName.
	c, err := codec.ByName(scheme.Scheme, "protobuf")
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Name())
	_, err = codec.ByName(scheme.Scheme, "protobuf-v2")
	fmt.Println(err)
	// Output:
	// protobuf
	// unknown codec name: "protobuf-v2" (known: protobuf, json, unstructured-cbor)
}
