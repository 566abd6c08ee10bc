package codec

import "k8s.io/apimachinery/pkg/runtime"

// Bound is implemented by codecs whose encoding is bound to the place it is
// stored, such as an authenticated cipher (package store/seal) whose
// additional data names the resource, key, resourceVersion and UID of the
// item. A store that holds a Bound codec encodes with EncodeBound and
// decodes with DecodeBound, passing the same ad for the same item; the
// plain Encode and Decode of a Bound codec may refuse to work.
//
// DecodeBound fails, never returns an object, when ad is not the one the
// data was encoded with: bytes moved to another item, resource or
// resourceVersion are detected, not served.
type Bound interface {
	Codec
	// EncodeBound is Encode with ad bound to the result.
	EncodeBound(dst []byte, obj runtime.Object, ad []byte) ([]byte, error)
	// DecodeBound is Decode of data encoded with ad.
	DecodeBound(data, ad []byte) (runtime.Object, error)
}

// EncodeFor encodes obj with c, bound to ad when c is Bound.
func EncodeFor(c Codec, dst []byte, obj runtime.Object, ad func() []byte) ([]byte, error) {
	if b, ok := c.(Bound); ok {
		return b.EncodeBound(dst, obj, ad())
	}
	return c.Encode(dst, obj)
}

// DecodeFor decodes data with c, bound to ad when c is Bound. ad is called
// only for a Bound codec, so that the others pay nothing for it.
func DecodeFor(c Codec, data []byte, ad func() []byte) (runtime.Object, error) {
	if b, ok := c.(Bound); ok {
		return b.DecodeBound(data, ad())
	}
	return c.Decode(data)
}
