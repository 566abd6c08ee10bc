package codec_test

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	cborserializer "k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/codec"
)

// The benchmarks compare the package's codecs with the other candidates on
// a realistic pod (podgen, ~7.7 KB of JSON) and on the same pod as an
// unstructured object. Candidates that are not codecs of this package are
// adapted below; each benchmark reports bytes/obj and whether the candidate
// brought the object back semantically equal (lossless 1 or 0).
//
//	go test -run '^$' -bench . -benchmem ./store/codec/

// benchCase is one candidate on one object.
type benchCase struct {
	object string
	codec  codec.Codec
	obj    runtime.Object
}

func benchCases(b *testing.B) []benchCase {
	pod := podgen.Pod(42)
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		b.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	var cases []benchCase
	for _, c := range []codec.Codec{
		codec.Protobuf(scheme.Scheme),
		codec.JSON(scheme.Scheme),
		serializerCandidate{"k8s-protobuf-unknown", protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)},
		serializerCandidate{"k8s-cbor", cborserializer.NewSerializer(scheme.Scheme, scheme.Scheme)},
		msgpackCandidate{},
	} {
		cases = append(cases, benchCase{"pod", c, pod})
	}
	for _, c := range []codec.Codec{
		codec.Unstructured(),
		serializerCandidate{"k8s-unstructured-json", unstructured.UnstructuredJSONScheme},
		msgpackCandidate{unstructured: true},
	} {
		cases = append(cases, benchCase{"unstructured-pod", c, u})
	}
	return cases
}

func BenchmarkEncode(b *testing.B) {
	for _, bc := range benchCases(b) {
		b.Run(bc.object+"/"+bc.codec.Name(), func(b *testing.B) {
			data := mustEncode(b, bc.codec, bc.obj)
			b.ReportAllocs()
			buf := make([]byte, 0, 2*len(data))
			for b.Loop() {
				var err error
				if buf, err = bc.codec.Encode(buf[:0], bc.obj); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes/obj")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases(b) {
		b.Run(bc.object+"/"+bc.codec.Name(), func(b *testing.B) {
			data := mustEncode(b, bc.codec, bc.obj)
			got, err := bc.codec.Decode(data)
			if err != nil {
				b.Fatal(err)
			}
			lossless := 0.0
			if apiequality.Semantic.DeepEqual(bc.obj, got) {
				lossless = 1
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.codec.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes/obj")
			b.ReportMetric(lossless, "lossless")
		})
	}
}

// BenchmarkDecodeParallel decodes with one shared codec from all Ps, as
// concurrent store readers do.
func BenchmarkDecodeParallel(b *testing.B) {
	for _, bc := range benchCases(b) {
		if _, ours := bc.codec.(serializerCandidate); ours {
			continue
		}
		if _, ours := bc.codec.(msgpackCandidate); ours {
			continue
		}
		b.Run(bc.object+"/"+bc.codec.Name(), func(b *testing.B) {
			data := mustEncode(b, bc.codec, bc.obj)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := bc.codec.Decode(data); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func mustEncode(b *testing.B, c codec.Codec, obj runtime.Object) []byte {
	b.Helper()
	data, err := c.Encode(nil, obj)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// serializerCandidate adapts an apimachinery serializer. Objects must carry
// their TypeMeta, as the apiserver's versioning codec ensures.
type serializerCandidate struct {
	name string
	s    runtime.Serializer
}

func (c serializerCandidate) Name() string { return c.name }

func (c serializerCandidate) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	err := c.s.Encode(obj, buf)
	return buf.Bytes(), err
}

func (c serializerCandidate) Decode(data []byte) (runtime.Object, error) {
	obj, _, err := c.s.Decode(data, nil, nil)
	return obj, err
}

// msgpackCandidate encodes with msgpack, struct fields named by their JSON
// tags; it decodes into a Pod, or into unstructured content when
// unstructured is set. It is lossy for typed objects (resource.Quantity
// keeps its value in unexported fields, so quantities come back zero); on
// unstructured content it only loses the type of nil slices and maps.
type msgpackCandidate struct {
	unstructured bool
}

func (msgpackCandidate) Name() string { return "msgpack" }

func (msgpackCandidate) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := msgpack.NewEncoder(buf)
	enc.SetCustomStructTag("json")
	var v interface{} = obj
	if u, ok := obj.(*unstructured.Unstructured); ok {
		v = u.Object
	}
	err := enc.Encode(v)
	return buf.Bytes(), err
}

func (c msgpackCandidate) Decode(data []byte) (runtime.Object, error) {
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	dec.SetCustomStructTag("json")
	if c.unstructured {
		var content map[string]interface{}
		err := dec.Decode(&content)
		return &unstructured.Unstructured{Object: content}, err
	}
	pod := &corev1.Pod{}
	err := dec.Decode(pod)
	return pod, err
}
