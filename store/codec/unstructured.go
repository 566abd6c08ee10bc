package codec

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// NameUnstructured is the name of the codec returned by Unstructured.
const NameUnstructured = "unstructured-cbor"

// maxDepth is the deepest nesting of maps and slices Unstructured accepts,
// the limit apimachinery's JSON and CBOR decoders apply.
const maxDepth = 10000

// Unstructured returns the codec for *unstructured.Unstructured objects
// (custom resources, dynamic informers), in CBOR (RFC 8949).
//
// It accepts an object whose content holds only the values apimachinery's
// decoders produce: nil, bool, int64, float64 (finite), string,
// []interface{} and map[string]interface{}, nested at most 10000 deep.
// Anything else (int, int32, json.Number, NaN...) cannot come back with the
// same Go type, and Encode rejects it with ErrUnsupportedType naming where
// it is.
//
// CBOR is chosen over JSON because it keeps the Go types: an integer comes
// back as int64 (as from apimachinery's unstructured JSON), and a float64
// comes back as float64 even when it is integral, where JSON turns
// float64(2) into int64(2). Strings are written as CBOR byte strings, so
// strings that are not valid UTF-8 survive too. Map keys are sorted, so the
// encoding of an object is deterministic. A nil slice or map inside the
// content comes back empty, which apiequality.Semantic considers equal.
// Any CBOR decoder reads the encoding; see cbor.go for the exact rules.
//
// The codec is safe for concurrent use.
func Unstructured() Codec {
	return unstructuredCodec{}
}

type unstructuredCodec struct{}

func (unstructuredCodec) Name() string { return NameUnstructured }

func (unstructuredCodec) Encode(dst []byte, obj runtime.Object) (out []byte, err error) {
	defer recoverEncode(NameUnstructured, obj, dst, &out, &err)
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return dst, fmt.Errorf("%w: %s encode %T: only *unstructured.Unstructured is accepted", ErrUnsupportedType, NameUnstructured, obj)
	}
	content := u.Object
	if content == nil {
		content = map[string]interface{}{}
	}
	out, err = appendCBOR(append(dst, tagUnstructured), content, 0)
	if err != nil {
		return dst, fmt.Errorf("%w: %s encode %s: content%w", ErrUnsupportedType, NameUnstructured, describe(u), err)
	}
	return out, nil
}

// Decode decodes data into a new *unstructured.Unstructured. Every string
// is copied (or is a shared constant), so the object shares no memory with
// data.
func (unstructuredCodec) Decode(data []byte) (obj runtime.Object, err error) {
	defer recoverDecode(NameUnstructured, &obj, &err)
	if len(data) < 2 {
		return nil, fmt.Errorf("%w: %s: %d bytes is too short", ErrDecode, NameUnstructured, len(data))
	}
	if data[0] != tagUnstructured {
		return nil, fmt.Errorf("%w: %s: format tag %#x is not %#x (written by another codec?)", ErrDecode, NameUnstructured, data[0], tagUnstructured)
	}
	d := cborDecoder{data: data, off: 1}
	major, n, err := d.head()
	if err == nil && major != cborMap {
		err = fmt.Errorf("content is CBOR major type %d, not a map", major>>5)
	}
	var content map[string]interface{}
	if err == nil {
		content, err = d.mapValue(n, 0)
	}
	if err == nil && d.off != len(data) {
		err = fmt.Errorf("%d bytes after the content", len(data)-d.off)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDecode, NameUnstructured, err)
	}
	return &unstructured.Unstructured{Object: content}, nil
}

// describe names an unstructured object in errors.
func describe(u *unstructured.Unstructured) string {
	kind, ns, name := u.GetKind(), u.GetNamespace(), u.GetName()
	if kind == "" {
		kind = "object"
	}
	if ns != "" {
		name = ns + "/" + name
	}
	if name == "" {
		return kind
	}
	return kind + " " + name
}
