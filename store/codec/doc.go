// Package codec encodes Kubernetes objects for storage in a warmcache file.
//
// A Codec turns objects into bytes and back without loss:
// Decode(Encode(obj)) is apiequality.Semantic.DeepEqual to obj, TypeMeta
// included, for every object the codec accepts. An object a codec could not
// bring back intact is refused by Encode (ErrUnsupportedType) rather than
// stored with a loss.
//
// # Codecs
//
//   - Protobuf, named "protobuf": typed objects registered in a scheme,
//     in Kubernetes' protobuf encoding. Every type in k8s.io/api.
//   - JSON, named "json": typed objects registered in a scheme, in JSON.
//     For Go types without protobuf methods (custom resources with Go
//     types).
//   - Unstructured, named "unstructured-cbor": *unstructured.Unstructured
//     (custom resources, dynamic informers), in CBOR.
//
// For (by kind) and ForObject (by example object) pick the best of them:
// Protobuf when the type has protobuf methods, else JSON, and Unstructured
// for unstructured objects and kinds the scheme does not know. A store
// records Codec.Name in its file and reopens it with ByName.
//
// # Choice
//
// Protobuf is the default for typed objects: the smallest and fastest
// candidate measured; CBOR for unstructured objects. ARCHITECTURE.md
// (Codecs) has the measurements behind the choice.
//
// # TypeMeta
//
// Objects reach a cache with TypeMeta in different states: empty for
// objects client-go decodes from protobuf lists and watches, set to the
// kind for JSON responses, occasionally something else. Decoded objects
// carry TypeMeta exactly as it was given to Encode: a typed encoding starts
// with a header recording the kind to decode into (chosen among the kinds
// the scheme registers the Go type under, preferring the one TypeMeta
// names) and whether TypeMeta was empty, equal to that kind, or other
// strings, which then follow. Protobuf messages do not carry TypeMeta, so
// without the header "set" and "empty" would be indistinguishable. The
// unstructured encoding carries apiVersion and kind in the content.
//
// # Memory
//
// Decode never retains its input, which may be a bbolt mmap that is gone
// after the transaction: every string and byte slice of the object is a
// copy (the generated protobuf code copies bytes fields; the JSON and CBOR
// decoders copy strings). The round-trip tests overwrite the input after
// decoding every kind and check that the object did not change. Each
// Decode returns a new object.
//
// Encode appends to dst and returns the extended slice, so a writer can
// reuse one buffer; on error it returns dst unchanged.
//
// # Robustness
//
// Decode returns an error wrapping ErrDecode for data that is truncated,
// corrupt, written by another codec (each format starts with its own tag
// byte) or naming a kind the scheme does not know; a panic in generated or
// custom unmarshalling code is recovered into ErrDecode as well, but for a
// memory fault reading data (a mapped file truncated under it, with
// debug.SetPanicOnFault on), which panics on to the caller that mapped it.
// The fuzz targets FuzzDecodeProtobuf, FuzzDecodeJSON and
// FuzzDecodeUnstructured check that arbitrary bytes never panic and that
// whatever decodes re-encodes to the same object.
//
// # Decoding an update's old object (Sharing)
//
// Protobuf also implements Sharing: DecodeSharing decodes a stored object
// relative to the object about to replace it, given that object's message
// (which package wire remembers for an object from the wire, and Message
// returns from a stored encoding, for a relist whose new objects are read
// from the store). A field whose bytes are the same in both (and, three
// levels down, a field of a struct field) is taken from the new object
// instead of decoded; the rest is decoded by the type's generated code.
// The result is reflect.DeepEqual to Decode's
// (TestDecodeSharingEqualsDecodeAllKinds mixes random objects of every
// kind; FuzzDecodeSharing) and shares memory with the new object, which
// the informer's no-mutation rule makes safe. For a podgen pod, go test
// -run '^$' -bench DecodeSharing -count 3 ./store/codec/ (a busy machine,
// where the plain decode took 19-30 µs and 19.0 KB): an update of its
// metadata decodes the old pod in 2.6-3.6 µs and 1.9 KB, one of its status
// in 5.7-6.2 µs and 3.3 KB, one of a container's image in 12.8-13.0 µs and
// 12.1 KB (the whole container list is decoded again).
//
// # Names and compatibility
//
// A codec's name identifies its wire format. A change to a format must come
// with a new name, so that a file written in the old one is rebuilt rather
// than misread. The formats depend on the Go types of the scheme: protobuf
// decoding skips fields its types do not know, so a store should also
// record what it needs to detect that the binary's API types changed.
//
// All codecs are safe for concurrent use.
package codec
