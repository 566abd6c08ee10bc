package codec_test

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/wire"
)

// A pod whose wire message is remembered is encoded from that message,
// once: the bytes are those Marshal writes when the message is the
// pod's, and the next encoding marshals the pod's fields.
func TestProtobufEncodesTheRememberedMessageOnce(t *testing.T) {
	c := codec.Protobuf(nil)
	pod := podgen.Pod(7)
	want, err := c.Encode(nil, pod)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	wire.Remember(pod, msg)
	got, err := c.Encode(nil, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding from the remembered message differs from marshalling:\n got %d bytes\nwant %d bytes", len(got), len(want))
	}

	// A message that is not the pod's shows which one was written.
	other := podgen.Pod(8)
	otherMsg, err := other.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	wire.Remember(pod, otherMsg)
	got, err = c.Encode(nil, pod)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := c.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if dec.(*corev1.Pod).Name != other.Name {
		t.Fatalf("decoded %q; want %q, the remembered message's pod", dec.(*corev1.Pod).Name, other.Name)
	}
	// Taken: the next encoding is the pod's own.
	got, err = c.Encode(nil, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the second encoding used the remembered message again; want it taken by the first")
	}
}
