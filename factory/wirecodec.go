package factory

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/warmcache/warmcache/store/wire"
)

// protobufPrefix starts every object in Kubernetes' protobuf encoding
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// wireSerializer is a REST client's NegotiatedSerializer whose decoders
// remember, for every typed object they decode from Kubernetes' protobuf
// encoding, the message it was decoded from (package store/wire): the
// store then writes those bytes instead of encoding the object again.
//
// Its protobuf decoder also unmarshals a single object (a watch event's,
// or a GET's) straight from the message inside the runtime.Unknown
// envelope, where client-go's protobuf serializer copies the message out
// of the envelope first; everything else, lists and anything it does not
// recognise included, goes to client-go's decoder.
type wireSerializer struct {
	runtime.NegotiatedSerializer
	// scheme is the one NegotiatedSerializer's codecs were made from:
	// the protobuf serializer's ObjectCreater.
	scheme *runtime.Scheme
}

func (s wireSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	_, pb := d.(*protobuf.Serializer)
	return wireDecoder{Decoder: s.NegotiatedSerializer.DecoderToVersion(d, gv), scheme: s.scheme, protobuf: pb && s.scheme != nil}
}

// wireDecoder is wireSerializer's decoder.
type wireDecoder struct {
	runtime.Decoder
	scheme *runtime.Scheme
	// protobuf: Decoder is client-go's protobuf serializer, without
	// conversion, as WithoutConversion's DecoderToVersion gives it.
	protobuf bool
}

func (d wireDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if d.protobuf && defaults == nil && into == nil {
		if obj, gvk, ok := d.decodeObject(data); ok {
			return obj, gvk, nil
		}
	}
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

// protoObject is what client-go's protobuf serializer requires of an
// object to unmarshal it.
type protoObject interface {
	runtime.Object
	Reset()
	Unmarshal([]byte) error
}

// decodeObject is client-go's protobuf Serializer.Decode of a new object
// (no defaults, no into) followed by WithoutVersionDecoder's clearing of
// its kind, less the copy of the message out of the envelope: Unmarshal
// copies every string and byte field out of data, so the object never
// aliases it; the remembered message does, as before. False, with nothing
// decoded, when data is not a well-formed envelope of a registered,
// non-list kind that unmarshals cleanly: client-go's decoder then decodes
// it and reports its own error.
func (d wireDecoder) decodeObject(data []byte) (runtime.Object, *schema.GroupVersionKind, bool) {
	env, ok := parseEnvelope(data)
	if !ok || env.kind == "" {
		return nil, nil, false
	}
	gvk := schema.FromAPIVersionAndKind(env.apiVersion, env.kind)
	if gvk.Version == "" {
		return nil, nil, false
	}
	obj, err := d.scheme.New(gvk)
	if err != nil {
		return nil, nil, false
	}
	pb, ok := obj.(protoObject)
	if !ok || meta.IsListType(obj) {
		return nil, nil, false
	}
	pb.Reset()
	if err := pb.Unmarshal(env.raw); err != nil {
		return nil, nil, false
	}
	// As WithoutVersionDecoder leaves every object it decodes.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	wire.Remember(obj, env.raw)
	return obj, &gvk, true
}

// envelope is the runtime.Unknown of an object in Kubernetes' protobuf
// encoding, its fields aliasing the data it was parsed from.
type envelope struct {
	apiVersion, kind string
	raw              []byte
}

// parseEnvelope parses data as the prefix then a runtime.Unknown: typeMeta
// (1: apiVersion 1, kind 2), raw (2), contentEncoding (3), contentType
// (4). It accepts only what runtime.Unknown's Unmarshal accepts, and only
// envelopes with one typeMeta and one raw, each of whose fields appear at
// most once, so that no merge rule of repeated fields applies.
func parseEnvelope(data []byte) (envelope, bool) {
	b, ok := bytes.CutPrefix(data, protobufPrefix)
	if !ok {
		return envelope{}, false
	}
	var env envelope
	hasRaw := false
	ok = bytesFields(b, 4, func(num protowire.Number, v []byte) bool {
		switch num {
		case 1:
			return bytesFields(v, 2, func(num protowire.Number, v []byte) bool {
				if num == 1 {
					env.apiVersion = string(v)
				} else {
					env.kind = string(v)
				}
				return true
			})
		case 2:
			env.raw, hasRaw = v, true
		}
		return true
	})
	return env, ok && hasRaw
}

// bytesFields calls fn with the value of each field of message b numbered
// 1 to last, and skips the others. False when b is malformed, when one of
// those fields is not length-delimited or occurs twice, or when fn returns
// false.
func bytesFields(b []byte, last protowire.Number, fn func(num protowire.Number, v []byte) bool) bool {
	var seen uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num > last {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return false
			}
			b = b[m:]
			continue
		}
		if typ != protowire.BytesType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeBytes(b)
		if m < 0 || !fn(num, v) {
			return false
		}
		b = b[m:]
	}
	return true
}

// protobufMessage returns the message of an object in Kubernetes'
// protobuf encoding (parseEnvelope's raw). It aliases data, which the REST
// client allocates for each object and never reuses. False for anything
// else.
func protobufMessage(data []byte) ([]byte, bool) {
	env, ok := parseEnvelope(data)
	return env.raw, ok
}
