package codec

import "errors"

// Errors returned by the codecs. They are wrapped with the operation and the
// type or codec involved; test with errors.Is.
var (
	// ErrDecode is returned by Decode for data that is not a valid encoding
	// of this codec: truncated, corrupt, written by another codec, or naming
	// a type the scheme does not know.
	ErrDecode = errors.New("cannot decode object")
	// ErrUnsupportedType is returned by Encode, For and ForObject for an
	// object or kind the codec cannot store losslessly: a type the scheme
	// does not know, a nil object, an internal version, or an unstructured
	// value that is not JSON-compatible (NaN, Inf, int instead of int64...).
	ErrUnsupportedType = errors.New("unsupported type")
	// ErrEncode is returned by Encode when a supported object fails to
	// encode (for example its protobuf size changed while it was being
	// marshalled because someone mutated it concurrently).
	ErrEncode = errors.New("cannot encode object")
	// ErrUnknownCodec is returned by ByName for a name no codec has.
	ErrUnknownCodec = errors.New("unknown codec name")
)
