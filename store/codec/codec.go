package codec

import "k8s.io/apimachinery/pkg/runtime"

// Codec turns objects of one resource into bytes and back, losslessly:
// Decode(Encode(obj)) is semantically equal (apiequality.Semantic) to obj for
// every type the codec accepts.
//
// Implementations are safe for concurrent use. Decode never retains data
// (it may alias a bbolt mmap) and returns a new object each call.
type Codec interface {
	// Name identifies the wire format; it is recorded in the file, and a
	// file written with another codec name is rebuilt, never misread.
	Name() string
	// Encode appends the encoding of obj to dst and returns the result.
	Encode(dst []byte, obj runtime.Object) ([]byte, error)
	// Decode decodes data into a new object. Malformed data returns an
	// error, never a panic.
	Decode(data []byte) (runtime.Object, error)
}

// RetainsNothing reports whether c's Encode retains neither dst nor its
// result, so that the caller may reuse that memory once done with it: true
// for this package's codecs, and for any codec with a RetainsNothing
// method that returns true (package seal's). A bolt store recycles its
// envelope buffers only for such codecs.
func RetainsNothing(c Codec) bool {
	switch c := c.(type) {
	case *protobufCodec, *jsonCodec, unstructuredCodec, *unstructuredCodec:
		return true
	case interface{ RetainsNothing() bool }:
		return c.RetainsNothing()
	}
	return false
}
