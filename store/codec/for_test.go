package codec_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/codec"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// widget is a custom resource with a Go type but no protobuf methods.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas int32  `json:"replicas"`
		Blob     []byte `json:"blob,omitempty"`
	} `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Blob = append([]byte(nil), w.Spec.Blob...)
	return &c
}

// widgetScheme is client-go's scheme plus widget.
func widgetScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypeWithName(widgetGVK, &widget{})
	return s
}

func TestFor(t *testing.T) {
	s := widgetScheme(t)
	tests := []struct {
		name   string
		scheme *runtime.Scheme
		gvk    schema.GroupVersionKind
		want   string
	}{
		{"built-in kind", s, corev1.SchemeGroupVersion.WithKind("Pod"), codec.NameProtobuf},
		{"nil scheme is client-go's", nil, corev1.SchemeGroupVersion.WithKind("Pod"), codec.NameProtobuf},
		{"registered kind without protobuf", s, widgetGVK, codec.NameJSON},
		{"unregistered kind", scheme.Scheme, widgetGVK, codec.NameUnstructured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := codec.For(tt.scheme, tt.gvk)
			if err != nil {
				t.Fatal(err)
			}
			if c.Name() != tt.want {
				t.Errorf("For(%v) = %s, want %s", tt.gvk, c.Name(), tt.want)
			}
		})
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: runtime.APIVersionInternal, Kind: "WatchEvent"},
		{Version: "v1"},
		{Kind: "Pod"},
	} {
		t.Run("rejects "+gvk.String(), func(t *testing.T) {
			if _, err := codec.For(s, gvk); !errors.Is(err, codec.ErrUnsupportedType) {
				t.Errorf("For(%v) error %v, want ErrUnsupportedType", gvk, err)
			}
		})
	}
}

func TestForObject(t *testing.T) {
	s := widgetScheme(t)
	tests := []struct {
		name string
		obj  runtime.Object
		want string
	}{
		{"typed built-in", &corev1.Pod{}, codec.NameProtobuf},
		{"registered type without protobuf", &widget{}, codec.NameJSON},
		{"unstructured of a built-in kind", &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Pod"}}, codec.NameUnstructured},
		{"unstructured custom resource", &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Gadget"}}, codec.NameUnstructured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := codec.ForObject(s, tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if c.Name() != tt.want {
				t.Errorf("ForObject(%T) = %s, want %s", tt.obj, c.Name(), tt.want)
			}
		})
	}
	for name, obj := range map[string]runtime.Object{
		"nil":               nil,
		"unstructured list": &unstructured.UnstructuredList{},
		"unregistered type": &notRegistered{},
	} {
		t.Run("rejects "+name, func(t *testing.T) {
			if _, err := codec.ForObject(s, obj); !errors.Is(err, codec.ErrUnsupportedType) {
				t.Errorf("ForObject error %v, want ErrUnsupportedType", err)
			}
		})
	}
}

// TestJSONCustomResource round-trips a registered type without protobuf
// methods, the case For picks JSON for.
func TestJSONCustomResource(t *testing.T) {
	s := widgetScheme(t)
	c, err := codec.For(s, widgetGVK)
	if err != nil {
		t.Fatal(err)
	}
	w := &widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Labels: map[string]string{"a": "b"}}}
	w.Spec.Replicas = 3
	w.Spec.Blob = []byte{0, 1, 0xff}
	checkRoundTrip(t, c, w)
	w.SetGroupVersionKind(widgetGVK)
	checkRoundTrip(t, c, w)
	if _, err := codec.Protobuf(s).Encode(nil, w); !errors.Is(err, codec.ErrUnsupportedType) {
		t.Errorf("Protobuf encoding a type without protobuf methods: error %v, want ErrUnsupportedType", err)
	}
}

func TestByName(t *testing.T) {
	pod := podgen.Pod(1)
	for _, c := range allCodecs() {
		t.Run(c.Name(), func(t *testing.T) {
			named, err := codec.ByName(nil, c.Name())
			if err != nil {
				t.Fatal(err)
			}
			if named.Name() != c.Name() {
				t.Fatalf("ByName(%q) returned codec %q", c.Name(), named.Name())
			}
			obj := forCodec(t, c, pod)
			data, err := c.Encode(nil, obj)
			if err != nil {
				t.Fatal(err)
			}
			got, err := named.Decode(data)
			if err != nil {
				t.Fatalf("codec from ByName cannot read what %s wrote: %v", c.Name(), err)
			}
			if _, ok := got.(*unstructured.Unstructured); ok != (c.Name() == codec.NameUnstructured) {
				t.Errorf("decoded %T", got)
			}
		})
	}
	if _, err := codec.ByName(nil, "msgpack"); !errors.Is(err, codec.ErrUnknownCodec) {
		t.Errorf("ByName(msgpack) error %v, want ErrUnknownCodec", err)
	}
}
