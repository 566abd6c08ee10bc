package factory

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/wire"
)

// decoderFor returns the decoder a REST client of restClientFor gets for
// mediaType, and that media type's serializer.
func decoderFor(t *testing.T, mediaType string) (runtime.Decoder, runtime.Serializer) {
	t.Helper()
	ns := wireSerializer{rest.CodecFactoryForGeneratedClient(scheme.Scheme, serializer.NewCodecFactory(scheme.Scheme)).WithoutConversion(), scheme.Scheme}
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	return ns.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion), info.Serializer
}

func TestWireDecoderRemembersTheMessageOfEachTypedObject(t *testing.T) {
	dec, ser := decoderFor(t, runtime.ContentTypeProtobuf)
	pod := podgen.Pod(3)
	var data bytes.Buffer
	if err := ser.Encode(pod, &data); err != nil {
		t.Fatal(err)
	}
	obj, _, err := dec.Decode(data.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := wire.Take(obj)
	if !ok {
		t.Fatal("no message remembered for a pod decoded from protobuf")
	}
	if !bytes.Equal(msg, want) {
		t.Fatalf("remembered %d bytes; want the pod's message (%d bytes)", len(msg), len(want))
	}

	// A list's items were decoded from the list's message: nothing is
	// remembered for the list or its items.
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []corev1.Pod{*podgen.Pod(4), *podgen.Pod(5)}}
	data.Reset()
	if err := ser.Encode(list, &data); err != nil {
		t.Fatal(err)
	}
	lobj, _, err := dec.Decode(data.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := wire.Take(lobj); ok {
		t.Fatal("a message was remembered for a list")
	}
	if _, ok := wire.Take(&lobj.(*corev1.PodList).Items[0]); ok {
		t.Fatal("a message was remembered for a list's item")
	}
}

func TestWireDecoderRemembersNothingForJSON(t *testing.T) {
	dec, ser := decoderFor(t, runtime.ContentTypeJSON)
	var data bytes.Buffer
	if err := ser.Encode(podgen.Pod(6), &data); err != nil {
		t.Fatal(err)
	}
	obj, _, err := dec.Decode(data.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := wire.Take(obj); ok {
		t.Fatal("a message was remembered for a pod decoded from JSON")
	}
}

func TestProtobufMessage(t *testing.T) {
	unknown := func(fields ...[]byte) []byte {
		return append(append([]byte{}, protobufPrefix...), bytes.Join(fields, nil)...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
		ok   bool
	}{
		{"raw only", unknown([]byte{0x12, 3, 'a', 'b', 'c'}), "abc", true},
		{"typeMeta, raw, content type", unknown([]byte{0x0a, 2, 0x0a, 0}, []byte{0x12, 1, 'x'}, []byte{0x22, 1, 'p'}), "x", true},
		{"empty raw", unknown([]byte{0x12, 0}), "", true},
		{"no raw", unknown([]byte{0x0a, 0}), "", false},
		{"no prefix", []byte{0x12, 1, 'x'}, "", false},
		{"truncated raw", unknown([]byte{0x12, 5, 'a'}), "", false},
		{"bad tag", unknown([]byte{0xff}), "", false},
		{"json", []byte(`{"kind":"Pod"}`), "", false},
	} {
		got, ok := protobufMessage(tc.data)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("%s: protobufMessage = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
