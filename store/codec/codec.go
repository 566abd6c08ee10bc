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
	// It retains neither dst nor the result: the caller reuses that
	// memory once it is done with it.
	Encode(dst []byte, obj runtime.Object) ([]byte, error)
	// Decode decodes data into a new object. Malformed data returns an
	// error, never a panic.
	Decode(data []byte) (runtime.Object, error)
}
