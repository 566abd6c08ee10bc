package layout_test

import (
	"hash/crc32"
	"hash/crc64"
	"hash/maphash"
	"testing"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// BenchmarkChecksum measures the checksum candidates on the envelope of a
// podgen pod (protobuf, ~4.7 KB) against the decode of its payload, the
// cost a read pays anyway: each candidate reports ns per object and
// pct-of-decode. Run with
//
//	go test -run '^$' -bench Checksum ./store/bolt/internal/layout/
//
// xxhash64 (github.com/cespare/xxhash/v2, not a dependency of the module)
// measured 330 ns on the same envelope and machine as the figures in
// checksum.go.
func BenchmarkChecksum(b *testing.B) {
	pod := podgen.Pod(42)
	c := codec.Protobuf(nil)
	payload, err := c.Encode(nil, pod)
	if err != nil {
		b.Fatal(err)
	}
	key := []byte(pod.Namespace + "/" + pod.Name)
	env := layout.EncodeEnvelope(string(key), pod.ResourceVersion, string(pod.UID), payload)
	var decodeNs float64 // of the last run of decode-protobuf, which runs first
	b.Run("decode-protobuf", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Decode(payload); err != nil {
				b.Fatal(err)
			}
		}
		decodeNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	ecma := crc64.MakeTable(crc64.ECMA)
	seed := maphash.MakeSeed()
	var sink uint64
	for _, bc := range []struct {
		name string
		fn   func()
	}{
		{"crc32c", func() { sink += uint64(crc32.Checksum(env, castagnoli)) }},
		{"crc32-ieee", func() { sink += uint64(crc32.ChecksumIEEE(env)) }},
		{"crc64-ecma", func() { sink += crc64.Checksum(env, ecma) }},
		{"maphash", func() { sink += maphash.Bytes(seed, env) }},
		{"verify-envelope", func() {
			if err := layout.VerifyEnvelope(key, env); err != nil {
				b.Fatal(err)
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(env)))
			for b.Loop() {
				bc.fn()
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(100*ns/decodeNs, "pct-of-decode")
		})
	}
	_ = sink
}
