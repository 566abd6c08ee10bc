package codec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// NameJSON is the name of the codec returned by JSON.
const NameJSON = "json"

// JSON returns the codec for typed objects in JSON, as the scheme's JSON
// serializer writes and reads them (encoding/json to encode; sigs.k8s.io/json,
// case-sensitive and integer-preserving, to decode). It accepts every object
// whose Go type is registered in scheme under a non-internal version; use it
// for registered types without protobuf methods (custom resources with Go
// types), Protobuf for the others: it is larger and slower (see the package
// documentation).
//
// A nil scheme means client-go's kubernetes scheme. The scheme must not be
// modified while the codec is in use. The codec is safe for concurrent use.
//
// The encoding is the same header as Protobuf's followed by the object's
// JSON. Decode restores TypeMeta exactly as it was given to Encode. Like any
// JSON, it cannot carry strings that are not valid UTF-8 (they come back
// with U+FFFD in place of the invalid bytes) nor NaN and infinite floats
// (Encode fails).
func JSON(scheme *runtime.Scheme) Codec {
	c := &jsonCodec{}
	c.init(NameJSON, tagJSON, scheme)
	return c
}

type jsonCodec struct {
	typed
}

func (c *jsonCodec) Name() string { return NameJSON }

func (c *jsonCodec) Encode(dst []byte, obj runtime.Object) (out []byte, err error) {
	defer recoverEncode(c.name, obj, dst, &out, &err)
	out, err = c.appendHeader(dst, obj)
	if err != nil {
		return dst, err
	}
	buf := bytes.NewBuffer(out)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return dst, fmt.Errorf("%w: %s encode %T: %w", ErrUnsupportedType, c.name, obj, err)
	}
	out = buf.Bytes()
	return out[:len(out)-1], nil // Encoder.Encode ends with a newline.
}

// Decode decodes data into a new object. encoding/json copies what it
// decodes, and the custom unmarshallers of apimachinery's types
// (RawExtension, FieldsV1) copy their input, so the object shares no memory
// with data.
func (c *jsonCodec) Decode(data []byte) (runtime.Object, error) {
	return c.decode(data, func(obj runtime.Object, body []byte) error {
		return sigsjson.UnmarshalCaseSensitivePreserveInts(body, obj)
	})
}
