package seal

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkAEAD measures AES-256-GCM alone (seal and open, with the
// header and additional data a payload has) at the payload sizes of a
// TLS Secret and a podgen pod in protobuf: the cost sealing adds to the
// codec, without the codec's noise.
//
//	go test ./store/seal -run '^$' -bench AEAD
func BenchmarkAEAD(b *testing.B) {
	k, err := NewKey(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		b.Fatal(err)
	}
	ad := bytes.Repeat([]byte{'a'}, 80)
	for _, size := range []int{5800, 4700, 1000} {
		plain := bytes.Repeat([]byte{'x'}, size)
		hdr := append([]byte{formatV1}, k.id[:]...)
		var s scratch
		full := s.fullAD(hdr, ad)
		sealed := k.aead.Seal(nil, nil, plain, full)
		buf := make([]byte, 0, size+Overhead)
		b.Run(fmt.Sprintf("seal/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				_ = k.aead.Seal(buf[:0], nil, plain, full)
			}
		})
		b.Run(fmt.Sprintf("open/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := k.aead.Open(buf[:0], nil, sealed, full); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
