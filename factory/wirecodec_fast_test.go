package factory

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/wire"
)

// envelopeOf returns obj in Kubernetes' protobuf encoding.
func envelopeOf(t testing.TB, ser k8sruntime.Serializer, obj k8sruntime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ser.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rawEnvelope builds the prefix and a runtime.Unknown from fields.
func rawEnvelope(fields ...[]byte) []byte {
	return append(append([]byte{}, protobufPrefix...), bytes.Join(fields, nil)...)
}

func bytesField(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

func typeMeta(apiVersion, kind string) []byte {
	return bytesField(1, append(bytesField(1, []byte(apiVersion)), bytesField(2, []byte(kind))...))
}

// wireDecoderSeeds are envelopes the fast path decodes and envelopes it
// must leave to client-go's decoder.
func wireDecoderSeeds(t testing.TB, ser k8sruntime.Serializer) [][]byte {
	pod := podgen.Pod(7)
	msg, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n"}, Data: map[string]string{"k": "v"}}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"k": {0, 1, 2}}}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []corev1.Pod{*podgen.Pod(8)}}
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	pod.Kind, pod.APIVersion = "Pod", "v1"
	return [][]byte{
		envelopeOf(t, ser, pod),
		envelopeOf(t, ser, cm),
		envelopeOf(t, ser, secret),
		envelopeOf(t, ser, list),
		envelopeOf(t, ser, status),
		rawEnvelope(typeMeta("v1", "Pod"), bytesField(2, msg), bytesField(3, nil), bytesField(4, []byte("application/vnd.kubernetes.protobuf"))),
		rawEnvelope(bytesField(2, msg), typeMeta("v1", "Pod")),                             // raw first
		rawEnvelope(typeMeta("v1", "Pod"), bytesField(2, msg), bytesField(9, []byte("x"))), // unknown field
		rawEnvelope(typeMeta("v1", "Pod"), bytesField(2, msg), bytesField(2, nil)),         // raw twice: the last wins
		rawEnvelope(typeMeta("v1", "Pod"), typeMeta("", "Node"), bytesField(2, msg)),       // typeMeta merged
		rawEnvelope(typeMeta("v1", ""), bytesField(2, msg)),                                // no kind
		rawEnvelope(typeMeta("", "Pod"), bytesField(2, msg)),                               // no version
		rawEnvelope(typeMeta("v1", "NoSuchKind"), bytesField(2, msg)),
		rawEnvelope(typeMeta("v1", "Pod"), bytesField(2, msg[:len(msg)/2])), // truncated message
		rawEnvelope(typeMeta("v1", "Pod"), bytesField(2, []byte{0xff, 0xff})),
		rawEnvelope(typeMeta("v1", "Pod")), // no raw
		rawEnvelope(typeMeta("v1", "Pod"), bytesField(2, nil)),
		rawEnvelope(typeMeta("v1", "Pod"), []byte{0x12, 0x7f}), // raw runs past the end
		rawEnvelope(typeMeta("v1", "Pod"), []byte{0x10, 0x01}), // raw with the wrong wire type
		rawEnvelope(),
		append([]byte{}, protobufPrefix[:3]...),
		[]byte(`{"kind":"Pod","apiVersion":"v1"}`),
	}
}

// checkSameDecode fails unless the wire decoder and client-go's own
// decoder give the same object, kind and error for data.
func checkSameDecode(t *testing.T, dec k8sruntime.Decoder, data []byte) {
	t.Helper()
	inner := dec.(wireDecoder).Decoder
	got, gotGVK, gotErr := dec.Decode(data, nil, nil)
	want, wantGVK, wantErr := inner.Decode(data, nil, nil)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("error %v; client-go's decoder: %v", gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotGVK, wantGVK) {
		t.Fatalf("kind %v; client-go's decoder: %v", gotGVK, wantGVK)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("object %#v\nclient-go's decoder: %#v", got, want)
	}
	if got != nil {
		if msg, ok := protobufMessage(data); ok {
			if rem, ok := wire.Take(got); ok != !meta.IsListType(got) || (ok && !bytes.Equal(rem, msg)) {
				t.Fatalf("remembered message: %v (%d bytes), want the envelope's (%d bytes) for a non-list", ok, len(rem), len(msg))
			}
		}
	}
}

func TestWireDecoderDecodesAsClientGo(t *testing.T) {
	dec, ser := decoderFor(t, k8sruntime.ContentTypeProtobuf)
	if !dec.(wireDecoder).protobuf {
		t.Fatal("the protobuf decoder does not take the direct path")
	}
	seeds := wireDecoderSeeds(t, ser)
	for i, data := range seeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkSameDecode(t, dec, data) })
	}
	// The pod takes the direct path; the list goes to client-go's.
	if _, _, ok := dec.(wireDecoder).decodeObject(seeds[0]); !ok {
		t.Error("a pod's envelope did not take the direct path")
	}
	if _, _, ok := dec.(wireDecoder).decodeObject(seeds[3]); ok {
		t.Error("a list's envelope took the direct path")
	}
}

func FuzzWireDecoder(f *testing.F) {
	dec, ser := decoderFor(&testing.T{}, k8sruntime.ContentTypeProtobuf)
	for _, data := range wireDecoderSeeds(f, ser) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSameDecode(t, dec, data) })
}

// TestWireDecoderDoesNotCopyTheMessage: a pod decoded from its envelope
// allocates less than client-go's decode by at least half the message,
// the copy client-go's protobuf serializer makes of it.
func TestWireDecoderDoesNotCopyTheMessage(t *testing.T) {
	dec, ser := decoderFor(t, k8sruntime.ContentTypeProtobuf)
	data := envelopeOf(t, ser, podgen.Pod(9))
	msg, _ := protobufMessage(data)
	inner := dec.(wireDecoder).Decoder
	// The least of five measurements: another goroutine's allocations
	// can only add to one.
	allocated := func(d k8sruntime.Decoder) uint64 {
		const runs = 100
		least := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				obj, _, err := d.Decode(data, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				wire.Take(obj)
			}
			runtime.ReadMemStats(&after)
			least = min(least, (after.TotalAlloc-before.TotalAlloc)/runs)
		}
		return least
	}
	direct, clientGo := allocated(dec), allocated(inner)
	if direct+uint64(len(msg))/2 > clientGo {
		t.Fatalf("a decode allocated %d bytes, client-go's %d: not a copy of the %d-byte message less", direct, clientGo, len(msg))
	}
}
