package codec_test

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/codec"
)

// The fuzz targets feed arbitrary bytes to Decode, which must return an
// object or an error wrapping ErrDecode, never panic. What decodes must
// re-encode, and decode again to the same object: Decode accepts exactly
// the values Encode can write. Seeds are real encodings.
//
//	go test -run '^$' -fuzz FuzzDecodeProtobuf -fuzztime 60s ./store/codec/

func FuzzDecodeProtobuf(f *testing.F) {
	fuzzTyped(f, codec.Protobuf(scheme.Scheme), false)
}

func FuzzDecodeJSON(f *testing.F) {
	// JSON normalises on the first trip (a RawExtension's JSON is
	// compacted), so compare the second encoding with the first.
	fuzzTyped(f, codec.JSON(scheme.Scheme), true)
}

func FuzzDecodeUnstructured(f *testing.F) {
	c := codec.Unstructured()
	seeds := []runtime.Object{&unstructured.Unstructured{Object: map[string]interface{}{}}}
	for _, obj := range byteFieldObjects() {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, &unstructured.Unstructured{Object: content})
	}
	r := rand.New(rand.NewSource(1))
	for range 10 {
		seeds = append(seeds, &unstructured.Unstructured{Object: map[string]interface{}{
			randomString(r): randomJSONValue(r, 0), "kind": "Widget",
		}})
	}
	addSeeds(f, c, seeds)
	reference := referenceCBOR()
	f.Fuzz(func(t *testing.T, data []byte) {
		obj := checkDecode(t, c, data, false)
		if obj == nil {
			return
		}
		// Any CBOR decoder agrees with ours on what it accepted.
		var content map[string]interface{}
		if err := reference.Unmarshal(data[1:], &content); err != nil {
			t.Fatalf("reference CBOR decoder rejects what Decode accepted: %v", err)
		}
		if want := obj.(*unstructured.Unstructured).Object; !apiequality.Semantic.DeepEqual(want, content) {
			t.Fatalf("reference CBOR decoder disagrees:\n%s", cmp.Diff(want, content))
		}
	})
}

func fuzzTyped(f *testing.F, c codec.Codec, compareBytes bool) {
	seeds := []runtime.Object{podgen.Pod(3)}
	for _, obj := range byteFieldObjects() {
		seeds = append(seeds, obj)
	}
	fill := newFuzzer(1)
	for i, gvk := range externalKinds() {
		if i%25 != 0 {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			f.Fatal(err)
		}
		fill.Fill(obj)
		if i%2 == 0 {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
		seeds = append(seeds, obj)
	}
	addSeeds(f, c, seeds)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, c, data, compareBytes)
	})
}

func addSeeds(f *testing.F, c codec.Codec, seeds []runtime.Object) {
	f.Add([]byte{})
	for _, obj := range seeds {
		data, err := c.Encode(nil, obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// checkDecode decodes data and, when that succeeds, checks that the object
// round-trips; it returns the object, or nil when data did not decode.
func checkDecode(t *testing.T, c codec.Codec, data []byte, compareBytes bool) runtime.Object {
	input := bytes.Clone(data)
	obj, err := c.Decode(data)
	if !bytes.Equal(input, data) {
		t.Fatal("Decode modified its input")
	}
	if err != nil {
		if !errors.Is(err, codec.ErrDecode) {
			t.Fatalf("Decode error does not wrap ErrDecode: %v", err)
		}
		if obj != nil {
			t.Fatalf("Decode returned %T with an error", obj)
		}
		return nil
	}
	enc, err := c.Encode(nil, obj)
	if err != nil {
		t.Fatalf("decoded %T does not encode: %v", obj, err)
	}
	again, err := c.Decode(enc)
	if err != nil {
		t.Fatalf("re-encoded %T does not decode: %v", obj, err)
	}
	if reflect.TypeOf(again) != reflect.TypeOf(obj) {
		t.Fatalf("decoded %T, then %T", obj, again)
	}
	if compareBytes {
		enc2, err := c.Encode(nil, again)
		if err != nil {
			t.Fatalf("second encoding: %v", err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable after a round trip:\n%q\n%q", enc, enc2)
		}
	} else if !apiequality.Semantic.DeepEqual(obj, again) {
		t.Fatalf("decoded object does not round-trip:\n%s", cmp.Diff(obj, again))
	}
	return obj
}

// referenceCBOR is a general CBOR decoder configured for the data model of
// unstructured content, to check the package's own decoder against.
func referenceCBOR() cbor.DecMode {
	dm, err := cbor.DecOptions{
		DupMapKey:             cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:       65535,
		MaxArrayElements:      2147483647,
		MaxMapPairs:           2147483647,
		IndefLength:           cbor.IndefLengthForbidden,
		TagsMd:                cbor.TagsForbidden,
		IntDec:                cbor.IntDecConvertSignedOrFail,
		DefaultMapType:        reflect.TypeFor[map[string]interface{}](),
		UTF8:                  cbor.UTF8RejectInvalid,
		DefaultByteStringType: reflect.TypeFor[string](),
		ByteStringToString:    cbor.ByteStringToStringAllowed,
		NaN:                   cbor.NaNDecodeForbidden,
		Inf:                   cbor.InfDecodeForbidden,
		BignumTag:             cbor.BignumTagForbidden,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}
