package codec

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// For returns the best codec for objects of kind gvk:
//
//   - Protobuf when gvk is registered in scheme and its Go type has the
//     generated protobuf methods (every type in k8s.io/api);
//   - JSON when gvk is registered without them (custom resources with Go
//     types registered in the scheme);
//   - Unstructured when gvk is not registered: the objects of such a kind
//     can only be *unstructured.Unstructured (dynamic informers, CRDs).
//
// A caller that stores *unstructured.Unstructured objects of a registered
// kind (a dynamic informer on pods) must use Unstructured, or ForObject on
// one of them. An internal version or an empty kind returns an error
// wrapping ErrUnsupportedType. A nil scheme means client-go's kubernetes
// scheme.
func For(s *runtime.Scheme, gvk schema.GroupVersionKind) (Codec, error) {
	if s == nil {
		s = scheme.Scheme
	}
	if gvk.Kind == "" || gvk.Version == "" || gvk.Version == runtime.APIVersionInternal {
		return nil, fmt.Errorf("%w: codec for %v: need a kind and an external version", ErrUnsupportedType, gvk)
	}
	obj, err := s.New(gvk)
	if runtime.IsNotRegisteredError(err) {
		return Unstructured(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: codec for %v: %w", ErrUnsupportedType, gvk, err)
	}
	return forTyped(s, obj), nil
}

// ForObject returns the best codec for objects like obj: Unstructured for
// an *unstructured.Unstructured, otherwise as For for the kind the scheme
// registers obj's Go type under. A typed object the scheme does not know,
// an unstructured list and a nil object return an error wrapping
// ErrUnsupportedType. A nil scheme means client-go's kubernetes scheme.
func ForObject(s *runtime.Scheme, obj runtime.Object) (Codec, error) {
	if s == nil {
		s = scheme.Scheme
	}
	switch obj.(type) {
	case nil:
		return nil, fmt.Errorf("%w: codec for a nil object", ErrUnsupportedType)
	case *unstructured.Unstructured:
		return Unstructured(), nil
	case runtime.Unstructured:
		return nil, fmt.Errorf("%w: codec for %T: only *unstructured.Unstructured is supported", ErrUnsupportedType, obj)
	}
	if _, _, err := s.ObjectKinds(obj); err != nil {
		return nil, fmt.Errorf("%w: codec for %T: %w", ErrUnsupportedType, obj, err)
	}
	return forTyped(s, obj), nil
}

func forTyped(s *runtime.Scheme, obj runtime.Object) Codec {
	_, marshal := obj.(runtime.ProtobufReverseMarshaller)
	_, unmarshal := obj.(protoUnmarshaler)
	if marshal && unmarshal {
		return Protobuf(s)
	}
	return JSON(s)
}

// ByName returns the codec whose Name is name, for reading a file that
// recorded it. A name no codec has returns an error wrapping
// ErrUnknownCodec. A nil scheme means client-go's kubernetes scheme.
func ByName(s *runtime.Scheme, name string) (Codec, error) {
	switch name {
	case NameProtobuf:
		return Protobuf(s), nil
	case NameJSON:
		return JSON(s), nil
	case NameUnstructured:
		return Unstructured(), nil
	}
	return nil, fmt.Errorf("%w: %q (known: %s, %s, %s)", ErrUnknownCodec, name, NameProtobuf, NameJSON, NameUnstructured)
}
