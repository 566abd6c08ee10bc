package seal_test

import (
	"bytes"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// secretValue is the data of the test Secret: its bytes must never
// appear in a sealed payload.
var secretValue = []byte("s3cr3t-value-that-must-never-reach-the-disk-in-clear")

func testSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "prod", Name: "db", UID: "uid-1", ResourceVersion: "42",
			Labels:      map[string]string{"app": "db"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(secretValue)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": secretValue},
	}
}

func secretCodec(t testing.TB) codec.Codec {
	t.Helper()
	c, err := codec.For(nil, corev1.SchemeGroupVersion.WithKind("Secret"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sealed(t testing.TB, keys ...seal.Key) *seal.Codec {
	t.Helper()
	c, err := seal.NewCodec(secretCodec(t), keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var ad = []byte("res;secrets\x00prod/db\x0042\x00uid-1")

func TestRoundTrip(t *testing.T) {
	k := newKey(t)
	c := sealed(t, k)
	in := testSecret()
	data, err := c.EncodeBound([]byte("prefix"), in, ad)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("prefix")) {
		t.Fatalf("EncodeBound did not append to dst")
	}
	data = data[len("prefix"):]
	if bytes.Contains(data, secretValue) || bytes.Contains(data, []byte("password")) {
		t.Fatalf("the sealed payload holds the secret in clear")
	}
	if id, err := seal.KeyIDOf(data); err != nil || id != k.ID() {
		t.Fatalf("KeyIDOf: %q, %v; want %q", id, err, k.ID())
	}
	out, err := c.DecodeBound(data, ad)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(in, out) {
		t.Fatalf("round trip changed the object:\n%#v\n%#v", in, out)
	}
	again, _ := c.EncodeBound(nil, in, ad)
	if bytes.Equal(again, data) {
		t.Fatalf("two seals of one object are identical: the nonce is not random")
	}
	if c.Name() != seal.NamePrefix+secretCodec(t).Name() {
		t.Errorf("Name %q", c.Name())
	}
	if inner, ok := seal.InnerName(c.Name()); !ok || inner != secretCodec(t).Name() {
		t.Errorf("InnerName(%q) = %q, %v", c.Name(), inner, ok)
	}
}

func TestUnboundUseFails(t *testing.T) {
	c := sealed(t, newKey(t))
	if _, err := c.Encode(nil, testSecret()); !errors.Is(err, seal.ErrUnbound) {
		t.Fatalf("Encode: %v, want ErrUnbound", err)
	}
	data, _ := c.EncodeBound(nil, testSecret(), ad)
	if _, err := c.Decode(data); !errors.Is(err, seal.ErrUnbound) {
		t.Fatalf("Decode: %v, want ErrUnbound", err)
	}
}

// TestMovedOrAlteredFails: a payload opens only under the additional data
// it was sealed with, and any altered byte is detected.
func TestMovedOrAlteredFails(t *testing.T) {
	k := newKey(t)
	c := sealed(t, k)
	data, err := c.EncodeBound(nil, testSecret(), ad)
	if err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string][]byte{
		"other key":             []byte("res;secrets\x00prod/web\x0042\x00uid-1"),
		"other resourceVersion": []byte("res;secrets\x00prod/db\x0043\x00uid-1"),
		"other resource":        []byte("res;configmaps\x00prod/db\x0042\x00uid-1"),
		"none":                  nil,
	} {
		t.Run(name, func(t *testing.T) {
			if obj, err := c.DecodeBound(data, other); !errors.Is(err, seal.ErrOpen) || obj != nil {
				t.Fatalf("DecodeBound: %v, %v; want ErrOpen", obj, err)
			}
		})
	}
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x01
		if obj, err := c.DecodeBound(bad, ad); err == nil || obj != nil {
			t.Fatalf("byte %d altered: decoded %v", i, obj)
		}
	}
	for n := range data {
		if obj, err := c.DecodeBound(data[:n], ad); err == nil || obj != nil {
			t.Fatalf("truncated to %d bytes: decoded %v", n, obj)
		}
	}
}

func TestWrongAndRotatedKeys(t *testing.T) {
	oldKey, newK, other := newKey(t), newKey(t), newKey(t)
	oldData, err := sealed(t, oldKey).EncodeBound(nil, testSecret(), ad)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("wrong key", func(t *testing.T) {
		c := sealed(t, other)
		if obj, err := c.DecodeBound(oldData, ad); !errors.Is(err, seal.ErrUnknownKey) || obj != nil {
			t.Fatalf("DecodeBound: %v, %v; want ErrUnknownKey", obj, err)
		}
		if _, err := c.CheckKey(oldData); !errors.Is(err, seal.ErrUnknownKey) {
			t.Fatalf("CheckKey: %v, want ErrUnknownKey", err)
		}
	})
	t.Run("plaintext payload", func(t *testing.T) {
		plain, err := secretCodec(t).Encode(nil, testSecret())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sealed(t, oldKey).DecodeBound(plain, ad); !errors.Is(err, seal.ErrFormat) {
			t.Fatalf("DecodeBound of a plaintext payload: %v, want ErrFormat", err)
		}
	})
	t.Run("rotated", func(t *testing.T) {
		c := sealed(t, newK, oldKey)
		if got := c.KeyIDs(); len(got) != 2 || got[0] != newK.ID() || got[1] != oldKey.ID() {
			t.Fatalf("KeyIDs %v", got)
		}
		out, err := c.DecodeBound(oldData, ad)
		if err != nil {
			t.Fatalf("the old key no longer opens its payloads: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(testSecret(), out) {
			t.Fatalf("decoded %#v", out)
		}
		if current, err := c.CheckKey(oldData); err != nil || current {
			t.Fatalf("CheckKey(old payload) = %v, %v; want stale", current, err)
		}
		newData, err := c.EncodeBound(nil, testSecret(), ad)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := seal.KeyIDOf(newData); id != newK.ID() {
			t.Fatalf("new writes sealed with %s, want the first key %s", id, newK.ID())
		}
		if current, err := c.CheckKey(newData); err != nil || !current {
			t.Fatalf("CheckKey(new payload) = %v, %v; want current", current, err)
		}
		if _, err := sealed(t, oldKey).DecodeBound(newData, ad); !errors.Is(err, seal.ErrUnknownKey) {
			t.Fatalf("the old key alone opened a payload of the new one: %v", err)
		}
	})
}

func FuzzDecodeBound(f *testing.F) {
	k, err := seal.NewKey(bytes.Repeat([]byte{9}, seal.KeySize))
	if err != nil {
		f.Fatal(err)
	}
	c := sealed(f, k)
	good, err := c.EncodeBound(nil, testSecret(), ad)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:20])
	f.Add([]byte{0xa1})
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := c.DecodeBound(data, ad)
		if err == nil && !bytes.Equal(data, good) {
			// Forging a tag is out of reach of a fuzzer: anything else
			// that decodes is a bug.
			t.Fatalf("decoded %T from %d forged bytes", obj, len(data))
		}
		if err != nil && obj != nil {
			t.Fatalf("an object with an error")
		}
		_, _ = seal.KeyIDOf(data)
		_, _ = c.CheckKey(data)
	})
}

var _ runtime.Object = (*corev1.Secret)(nil)

// The sealed codec appends to dst and keeps nothing: a store may recycle
// its envelope buffers (codec.RetainsNothing).
func TestSealedCodecRetainsNothing(t *testing.T) {
	if !codec.RetainsNothing(sealed(t, newKey(t))) {
		t.Fatal("codec.RetainsNothing is false for a sealed codec")
	}
}
