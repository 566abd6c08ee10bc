package codec

import (
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/store/wire"
)

// NameProtobuf is the name of the codec returned by Protobuf.
const NameProtobuf = "protobuf"

// protoUnmarshaler is what the generated Kubernetes protobuf code provides
// for decoding.
type protoUnmarshaler interface {
	Unmarshal(data []byte) error
}

// Protobuf returns the codec for typed objects in Kubernetes' protobuf
// encoding, the format kube-apiserver stores in etcd. It accepts every
// object whose Go type is registered in scheme (under a non-internal
// version) and has the generated protobuf methods (Size,
// MarshalToSizedBuffer, Unmarshal), which every type in k8s.io/api has. Decode returns a new object of the registered type.
//
// A nil scheme means client-go's kubernetes scheme (k8s.io/client-go/
// kubernetes/scheme.Scheme). The scheme must not be modified while the codec
// is in use. The codec is safe for concurrent use.
//
// The encoding is a small header (a format tag, the group, version and kind
// to decode into, and how the object's TypeMeta was set) followed by the
// object's protobuf message. Protobuf messages do not carry TypeMeta; the
// header records it, so Decode restores apiVersion and kind exactly as they
// were given to Encode: empty stays empty (as in objects client-go decodes
// from protobuf lists and watches), set stays set, to the same strings.
//
// Encode returns dst unchanged with an error wrapping ErrUnsupportedType
// for objects it does not accept. For an object decoded from a watch
// stream by the factory's clients, Encode writes the message it was
// decoded from (package store/wire) instead of marshalling it again.
func Protobuf(scheme *runtime.Scheme) Codec {
	c := &protobufCodec{}
	c.init(NameProtobuf, tagProtobuf, scheme)
	return c
}

type protobufCodec struct {
	typed
}

func (c *protobufCodec) Name() string { return NameProtobuf }

func (c *protobufCodec) Encode(dst []byte, obj runtime.Object) (out []byte, err error) {
	defer recoverEncode(c.name, obj, dst, &out, &err)
	m, ok := obj.(runtime.ProtobufReverseMarshaller)
	if !ok {
		return dst, fmt.Errorf("%w: %s encode %T: type does not implement protobuf marshalling", ErrUnsupportedType, c.name, obj)
	}
	out, err = c.appendHeader(dst, obj)
	if err != nil {
		return dst, err
	}
	if msg, ok := wire.Take(obj); ok {
		// The message obj was decoded from (package wire): the same bytes
		// Marshal would write, less a marshal.
		return append(out, msg...), nil
	}
	size := m.Size()
	start := len(out)
	out = slices.Grow(out, size)[:start+size]
	n, err := m.MarshalToSizedBuffer(out[start:])
	if err != nil {
		return dst, fmt.Errorf("%w: %s encode %T: %w", ErrEncode, c.name, obj, err)
	}
	if n != size {
		return dst, fmt.Errorf("%w: %s encode %T: wrote %d bytes, expected %d (object modified during encoding?)", ErrEncode, c.name, obj, n, size)
	}
	return out, nil
}

// Decode decodes data into a new object. The generated protobuf code copies
// every string and byte slice it decodes, so the object shares no memory
// with data (TestDecodeDoesNotAliasInput checks this for every type).
func (c *protobufCodec) Decode(data []byte) (runtime.Object, error) {
	return c.decode(data, unmarshalProto)
}

// unmarshalProto unmarshals body into obj with its generated code.
func unmarshalProto(obj runtime.Object, body []byte) error {
	u, ok := obj.(protoUnmarshaler)
	if !ok {
		return fmt.Errorf("%T: %w", obj, errNotUnmarshaler)
	}
	return u.Unmarshal(body)
}

// Message implements Sharing: data's body after the header, as the
// object's generated Marshal wrote it.
func (c *protobufCodec) Message(data []byte) ([]byte, error) {
	_, body, err := c.readHeader(data)
	return body, err
}

// DecodeSharing implements Sharing: Decode, with every field of the object
// (and of its struct fields, three levels down) that data encodes as
// likeMsg does taken from like.
func (c *protobufCodec) DecodeSharing(data []byte, like runtime.Object, likeMsg []byte) (runtime.Object, error) {
	return c.decode(data, func(obj runtime.Object, body []byte) error {
		ov, lv := reflect.ValueOf(obj), reflect.ValueOf(like)
		if ov.Type() != lv.Type() || ov.Kind() != reflect.Pointer || ov.Elem().Kind() != reflect.Struct || lv.IsNil() {
			return unmarshalProto(obj, body)
		}
		buf := spanBufs.Get().(*[]span)
		defer putSpans(buf)
		return unmarshalSharing(ov, lv, body, likeMsg, shareDepth, buf)
	})
}
