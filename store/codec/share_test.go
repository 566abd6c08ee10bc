package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/codec"
)

var sharing = codec.Protobuf(scheme.Scheme).(codec.Sharing)

// messageOf returns obj's protobuf message.
func messageOf(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	msg, err := obj.(interface{ Marshal() ([]byte, error) }).Marshal()
	if err != nil {
		t.Fatalf("Marshal %T: %v", obj, err)
	}
	return msg
}

// checkDecodeSharing encodes obj, decodes it sharing with like (decoded
// from likeMsg) and fails unless the result equals Decode's, exactly
// (reflect.DeepEqual: nil and empty told apart). It returns the result.
func checkDecodeSharing(t *testing.T, obj, like runtime.Object, likeMsg []byte) runtime.Object {
	t.Helper()
	data, err := sharing.Encode(nil, obj)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	want, err := sharing.Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	likeBefore := like.DeepCopyObject()
	// Copies, overwritten afterwards: the result must alias neither
	// (a store's are its file's mapped pages).
	dataCopy, likeMsgCopy := bytes.Clone(data), bytes.Clone(likeMsg)
	got, err := sharing.DecodeSharing(dataCopy, like, likeMsgCopy)
	if err != nil {
		t.Fatalf("DecodeSharing: %v", err)
	}
	for _, b := range [][]byte{dataCopy, likeMsgCopy} {
		for i := range b {
			b[i] = 0xaa
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeSharing differs from Decode (-Decode +DecodeSharing):\n%s", cmp.Diff(want, got))
	}
	// Invariant 6: like is an object handed out; the decode only reads it.
	if !reflect.DeepEqual(like, likeBefore) {
		t.Fatalf("DecodeSharing changed like:\n%s", cmp.Diff(likeBefore, like))
	}
	return got
}

// mix returns a copy of a in which each protobuf field, and each field of
// a struct field, is b's with probability 1/2: objects that encode
// partly alike, at every level sharing looks at.
func mix(r *rand.Rand, a, b runtime.Object) runtime.Object {
	out := a.DeepCopyObject()
	mixValue(r, reflect.ValueOf(out).Elem(), reflect.ValueOf(b.DeepCopyObject()).Elem(), 2)
	return out
}

func mixValue(r *rand.Rand, dst, src reflect.Value, depth int) {
	t := dst.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if _, ok := sf.Tag.Lookup("protobuf"); !ok || !sf.IsExported() {
			continue
		}
		switch {
		case depth > 0 && sf.Type.Kind() == reflect.Struct && r.Intn(2) == 0:
			mixValue(r, dst.Field(i), src.Field(i), depth-1)
		case r.Intn(2) == 0:
			dst.Field(i).Set(src.Field(i))
		}
	}
}

// TestDecodeSharingEqualsDecodeAllKinds: for random objects of every kind
// and objects mixed from two of them, DecodeSharing gives what Decode
// gives, whatever the two have in common.
func TestDecodeSharingEqualsDecodeAllKinds(t *testing.T) {
	iterations := 4
	if testing.Short() {
		iterations = 2
	}
	seed := testSeed(t)
	f := newFuzzer(seed)
	r := rand.New(rand.NewSource(seed))
	for _, gvk := range externalKinds() {
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := obj.(interface{ Marshal() ([]byte, error) }); !ok {
			continue
		}
		t.Run(kindName(gvk), func(t *testing.T) {
			for range iterations {
				a, _ := scheme.Scheme.New(gvk)
				b, _ := scheme.Scheme.New(gvk)
				f.Fill(a)
				f.Fill(b)
				msg := messageOf(t, a)
				like, _ := scheme.Scheme.New(gvk)
				if err := like.(interface{ Unmarshal([]byte) error }).Unmarshal(msg); err != nil {
					t.Fatal(err)
				}
				checkDecodeSharing(t, mix(r, a, b), like, msg)
				checkDecodeSharing(t, a, like, msg)
				checkDecodeSharing(t, b, like, msg)
			}
		})
	}
}

// decodedPod returns a podgen pod as a client decodes it, and its message.
func decodedPod(t *testing.T, i int, change func(*corev1.Pod)) (*corev1.Pod, []byte) {
	t.Helper()
	p := podgen.Pod(i)
	if change != nil {
		change(p)
	}
	msg := messageOf(t, p)
	var out corev1.Pod
	if err := out.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	return &out, msg
}

func samePointer(a, b interface{}) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// TestDecodeSharingSharesWhatIsUnchanged: an update of a pod's metadata
// shares its spec and status with the new pod, and the metadata's
// unchanged maps; a status update shares the spec and the metadata's
// unchanged parts; what changed is decoded.
func TestDecodeSharingSharesWhatIsUnchanged(t *testing.T) {
	old, _ := decodedPod(t, 5, nil)
	t.Run("annotation", func(t *testing.T) {
		like, likeMsg := decodedPod(t, 5, func(p *corev1.Pod) {
			p.ResourceVersion = "999"
			p.Annotations = map[string]string{"changed": "yes"}
		})
		got := checkDecodeSharing(t, old, like, likeMsg).(*corev1.Pod)
		if !samePointer(got.Spec.Containers, like.Spec.Containers) || !samePointer(got.Status.ContainerStatuses, like.Status.ContainerStatuses) {
			t.Error("the unchanged spec and status were decoded, not shared")
		}
		if !samePointer(got.Labels, like.Labels) || !samePointer(got.ManagedFields, like.ManagedFields) {
			t.Error("the unchanged labels and managed fields were decoded, not shared")
		}
		if samePointer(got.Annotations, like.Annotations) {
			t.Error("the changed annotations were shared")
		}
	})
	t.Run("status", func(t *testing.T) {
		like, likeMsg := decodedPod(t, 5, func(p *corev1.Pod) {
			p.ResourceVersion = "999"
			p.Status.Conditions[0].LastTransitionTime = metav1.Unix(1, 0)
		})
		got := checkDecodeSharing(t, old, like, likeMsg).(*corev1.Pod)
		if !samePointer(got.Spec.Containers, like.Spec.Containers) || !samePointer(got.Labels, like.Labels) {
			t.Error("the unchanged spec and labels were decoded, not shared")
		}
		if !samePointer(got.Status.ContainerStatuses, like.Status.ContainerStatuses) {
			t.Error("the unchanged container statuses were decoded, not shared")
		}
		if samePointer(got.Status.Conditions, like.Status.Conditions) {
			t.Error("the changed conditions were shared")
		}
	})
	t.Run("another pod", func(t *testing.T) {
		like, likeMsg := decodedPod(t, 6, nil)
		checkDecodeSharing(t, old, like, likeMsg)
	})
	t.Run("another type", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		checkDecodeSharing(t, old, cm, messageOf(t, cm))
	})
}

// podHeader returns the codec's header of a pod without TypeMeta: what
// precedes the pod's message in its encoding.
func podHeader(t testing.TB) []byte {
	t.Helper()
	p := podgen.Pod(1)
	data, err := sharing.Encode(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	msg := messageOf(t, p)
	if !bytes.HasSuffix(data, msg) {
		t.Fatal("the encoding does not end with the message")
	}
	return data[:len(data)-len(msg)]
}

// FuzzDecodeSharing: whatever the stored message, DecodeSharing fails
// when Decode fails and otherwise gives what Decode gives.
func FuzzDecodeSharing(f *testing.F) {
	p := podgen.Pod(3)
	seed, _ := p.Marshal()
	f.Add(seed)
	p.Annotations = map[string]string{"a": "b"}
	seed2, _ := p.Marshal()
	f.Add(seed2)
	f.Add(seed2[:len(seed2)/2])
	likeMsg, _ := podgen.Pod(3).Marshal()
	like := &corev1.Pod{}
	if err := like.Unmarshal(likeMsg); err != nil {
		f.Fatal(err)
	}
	header := podHeader(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		data := append(append([]byte{}, header...), msg...)
		want, werr := sharing.Decode(data)
		got, gerr := sharing.DecodeSharing(data, like, likeMsg)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Decode error %v, DecodeSharing error %v", werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeSharing differs from Decode:\n%s", cmp.Diff(want, got))
		}
	})
}

// BenchmarkDecodeSharing decodes a stored podgen pod as the old object of
// an update (the stored pod, then the pod as changed), plainly and
// sharing with the new pod, for three kinds of update.
func BenchmarkDecodeSharing(b *testing.B) {
	old := podgen.Pod(5)
	data, err := sharing.Encode(nil, old)
	if err != nil {
		b.Fatal(err)
	}
	for _, u := range []struct {
		name   string
		change func(*corev1.Pod)
	}{
		{"metadata", func(p *corev1.Pod) { p.Annotations = map[string]string{"changed": "yes"} }},
		{"status", func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.Unix(1, 0) }},
		{"spec", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "changed" }},
	} {
		p := podgen.Pod(5)
		p.ResourceVersion = "999"
		u.change(p)
		msg, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		like := &corev1.Pod{}
		if err := like.Unmarshal(msg); err != nil {
			b.Fatal(err)
		}
		b.Run(u.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sharing.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(u.name+"/sharing", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sharing.DecodeSharing(data, like, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fieldsOf splits a message into its field occurrences (tag included).
func fieldsOf(t *testing.T, msg []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if n < 0 || m < 0 {
			t.Fatal("malformed message")
		}
		out = append(out, msg[:n+m])
		msg = msg[n+m:]
	}
	return out
}

// TestDecodeSharingNonCanonicalEncodings: encodings the generated code
// never writes but decodes (fields out of order, a message split over two
// occurrences, which merge; a field written twice, the last one winning)
// decode as Decode decodes them, on either side.
func TestDecodeSharingNonCanonicalEncodings(t *testing.T) {
	p := podgen.Pod(11)
	msg := messageOf(t, p)
	top := fieldsOf(t, msg) // metadata (1), spec (2), status (3)
	if len(top) != 3 {
		t.Fatalf("a podgen pod has %d top-level fields, want 3", len(top))
	}
	meta := p.ObjectMeta
	metaMsg, err := meta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	metaFields := fieldsOf(t, metaMsg)
	splitMeta := func() []byte {
		// Two occurrences of field 1, which merge: the first half of
		// ObjectMeta's fields, then the rest.
		half := len(metaFields) / 2
		a := bytes.Join(metaFields[:half], nil)
		b := bytes.Join(metaFields[half:], nil)
		return append(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), a),
			protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), b)...)
	}
	// ObjectMeta's name (1) written before the whole ObjectMeta, whose
	// own name wins.
	nameTwice := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		append(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("first")), metaMsg...))
	variants := map[string][]byte{
		"canonical":            msg,
		"status before spec":   bytes.Join([][]byte{top[0], top[2], top[1]}, nil),
		"metadata split":       bytes.Join([][]byte{splitMeta(), top[1], top[2]}, nil),
		"name written twice":   bytes.Join([][]byte{nameTwice, top[1], top[2]}, nil),
		"spec written twice":   bytes.Join([][]byte{top[0], top[1], top[1], top[2]}, nil),
		"unknown field at end": bytes.Join([][]byte{top[0], top[1], top[2], protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)}, nil),
	}
	header := podHeader(t)
	for likeName, likeMsg := range variants {
		like := &corev1.Pod{}
		if err := like.Unmarshal(likeMsg); err != nil {
			t.Fatalf("%s: %v", likeName, err)
		}
		for name, m := range variants {
			data := append(append([]byte{}, header...), m...)
			want, err := sharing.Decode(data)
			if err != nil {
				t.Fatalf("%s: Decode: %v", name, err)
			}
			got, err := sharing.DecodeSharing(data, like, likeMsg)
			if err != nil {
				t.Fatalf("%s like %s: DecodeSharing: %v", name, likeName, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s like %s: DecodeSharing differs from Decode:\n%s", name, likeName, cmp.Diff(want, got))
			}
		}
	}
}

// TestMessage: Message returns, from an encoding, the object's protobuf
// message (what DecodeSharing takes as likeMsg), aliasing the encoding;
// data that is not an encoding of the codec's is an error.
func TestMessage(t *testing.T) {
	p := podgen.Pod(3)
	data, err := sharing.Encode(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sharing.Message(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(msg, messageOf(t, p)) {
		t.Fatalf("Message returned %d bytes, not the pod's message (%d bytes)", len(msg), len(messageOf(t, p)))
	}
	if &msg[len(msg)-1] != &data[len(data)-1] {
		t.Error("Message copied the message")
	}
	for name, bad := range map[string][]byte{
		"empty":         nil,
		"another codec": append([]byte{data[0] + 1}, data[1:]...),
		"truncated":     data[:4],
	} {
		if _, err := sharing.Message(bad); !errors.Is(err, codec.ErrDecode) {
			t.Errorf("%s: Message error %v, want ErrDecode", name, err)
		}
	}
}

// TestDecodeSharingManyFields: messages of thousands of fields, whose
// spans outgrow the pooled buffer in the middle of the walk (the caller's
// spans then stay in the buffer's old array) and are too many to pool.
func TestDecodeSharingManyFields(t *testing.T) {
	labels := func(p *corev1.Pod) {
		p.Labels = map[string]string{}
		for i := range 2100 {
			p.Labels[fmt.Sprintf("label-%04d", i)] = "v"
		}
	}
	for range 2 {
		old, _ := decodedPod(t, 7, labels)
		like, likeMsg := decodedPod(t, 7, func(p *corev1.Pod) {
			labels(p)
			p.Annotations = map[string]string{"changed": "yes"}
		})
		got := checkDecodeSharing(t, old, like, likeMsg).(*corev1.Pod)
		if !samePointer(got.Labels, like.Labels) || !samePointer(got.Spec.Containers, like.Spec.Containers) {
			t.Error("the unchanged labels and spec were decoded, not shared")
		}
	}
}
