package decode

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// TestItem checks that an item decodes to the object encoded, and that a
// malformed envelope or payload is an error wrapping store.ErrCorrupt
// naming the key.
func TestItem(t *testing.T) {
	c := codec.Protobuf(nil)
	payload, err := c.Encode(nil, testkit.Pod("a", "7"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Item(c, "pods", "ns/a", layout.EncodeEnvelope("ns/a", "7", "", payload), Shared{})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := obj.(*corev1.Pod); !ok || p.Name != "a" || p.ResourceVersion != "7" {
		t.Fatalf("decoded %#v, want pod a at 7", obj)
	}
	for name, v := range map[string][]byte{
		"envelope": []byte("not an envelope"),
		"payload":  layout.EncodeEnvelope("ns/a", "7", "", []byte("not protobuf")),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Item(c, "pods", "ns/a", v, Shared{})
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("error %v, want store.ErrCorrupt", err)
			}
		})
	}
}

// TestSharingWithStored checks that a decode sharing with an object read
// from the file gives the object stored, and that a malformed envelope or
// a nil object gives the zero Shared, which decodes without sharing.
func TestSharingWithStored(t *testing.T) {
	c := codec.Protobuf(nil)
	likePayload, err := c.Encode(nil, testkit.Pod("a", "8"))
	if err != nil {
		t.Fatal(err)
	}
	likeEnv := layout.EncodeEnvelope("ns/a", "8", "", likePayload)
	like, err := Item(c, "pods", "ns/a", likeEnv, Shared{})
	if err != nil {
		t.Fatal(err)
	}
	sh := SharingWithStored(c, like, likeEnv)
	if sh.codec == nil {
		t.Fatal("no sharing with a stored pod of a protobuf codec")
	}
	oldPayload, err := c.Encode(nil, testkit.Pod("a", "7"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Item(c, "pods", "ns/a", layout.EncodeEnvelope("ns/a", "7", "", oldPayload), sh)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := obj.(*corev1.Pod); !ok || p.Name != "a" || p.ResourceVersion != "7" {
		t.Fatalf("decoded sharing %#v, want pod a at 7", obj)
	}
	if sh := SharingWithStored(c, like, []byte("garbage")); sh.codec != nil {
		t.Error("sharing with a malformed envelope")
	}
	if sh := SharingWithStored(c, nil, likeEnv); sh.codec != nil {
		t.Error("sharing with a nil object")
	}
}
