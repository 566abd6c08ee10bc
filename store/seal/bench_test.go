package seal_test

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// BenchmarkCodec measures the cost per object of sealing beside the
// plaintext path: encode (+ seal) and (open +) decode, for a TLS Secret of
// cert-manager's shape and a podgen pod, both with the protobuf codec.
//
//	go test ./store/seal -run '^$' -bench Codec -benchmem
func BenchmarkCodec(b *testing.B) {
	tls := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web-tls", UID: "0b7c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3", ResourceVersion: "123456",
			Labels:      map[string]string{"controller.cert-manager.io/fao": "true"},
			Annotations: map[string]string{"cert-manager.io/issuer-name": "letsencrypt", "cert-manager.io/common-name": "web.example.com"}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{
			"tls.crt": bytes.Repeat([]byte("MIIFazCCA1OgAwIBAgIUb"), 2600/21), // ~2.6 KB PEM chain
			"tls.key": bytes.Repeat([]byte("MIIEvQIBADANBgkqhkiG9"), 1700/21), // ~1.7 KB PEM key
			"ca.crt":  bytes.Repeat([]byte("MIIDdzCCAl+gAwIBAgIEA"), 1300/21),
		},
	}
	key, err := seal.NewKey(bytes.Repeat([]byte{3}, seal.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
	}{{"secret-tls", tls}, {"pod", podgen.Pod(1)}} {
		inner, err := codec.ForObject(nil, tc.obj)
		if err != nil {
			b.Fatal(err)
		}
		sealed, err := seal.NewCodec(inner, []seal.Key{key})
		if err != nil {
			b.Fatal(err)
		}
		plain, _ := inner.Encode(nil, tc.obj)
		data, err := sealed.EncodeBound(nil, tc.obj, ad)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 0, 2*len(data))
		b.Run(tc.name+"/encode/plain", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, err := inner.Encode(buf[:0], tc.obj); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/encode/sealed", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, err := sealed.EncodeBound(buf[:0], tc.obj, ad); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/decode/plain", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, err := inner.Decode(plain); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/decode/sealed", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, err := sealed.DecodeBound(data, ad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
