package factory

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/store/wire"
)

// protobufPrefix starts every object in Kubernetes' protobuf encoding
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// wireSerializer is a REST client's NegotiatedSerializer whose decoders
// remember, for every typed object they decode from Kubernetes' protobuf
// encoding, the message it was decoded from (package store/wire): the
// store then writes those bytes instead of encoding the object again.
type wireSerializer struct {
	runtime.NegotiatedSerializer
}

func (s wireSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return wireDecoder{s.NegotiatedSerializer.DecoderToVersion(d, gv)}
}

// wireDecoder is wireSerializer's decoder.
type wireDecoder struct {
	runtime.Decoder
}

func (d wireDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.Decoder.Decode(data, defaults, into)
	if err != nil || obj == nil {
		return obj, gvk, err
	}
	// The prefix test first: JSON, the common case of other clients, then
	// costs no IsListType (a reflect type lookup under a global lock).
	if msg, ok := protobufMessage(data); ok && !meta.IsListType(obj) {
		wire.Remember(obj, msg)
	}
	return obj, gvk, err
}

// protobufMessage returns the message of an object in Kubernetes'
// protobuf encoding: the prefix, then a runtime.Unknown whose Raw field
// (2) is the object's message. It aliases data, which the REST client
// allocates for each object and never reuses. False for anything else.
func protobufMessage(data []byte) ([]byte, bool) {
	b, ok := bytes.CutPrefix(data, protobufPrefix)
	if !ok {
		return nil, false
	}
	var raw []byte
	found := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, false
			}
			raw, found, b = v, true, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, false
		}
		b = b[m:]
	}
	return raw, found
}
