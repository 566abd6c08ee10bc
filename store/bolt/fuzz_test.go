package bolt

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// FuzzEnvelope checks that decoding never panics and that what decodes
// re-encodes to an envelope with the same fields.
func FuzzEnvelope(f *testing.F) {
	f.Add(layout.EncodeEnvelope("k", "123", "uid", []byte("payload")))
	f.Add(layout.EncodeEnvelope("", "", "", nil))
	f.Add([]byte{0x93, 0xd9, 0x01, 'x', 0xa0, 0xc4, 0x00})
	f.Add([]byte{0x93, 0xdb, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := layout.DecodeEnvelope(data)
		if err != nil {
			return
		}
		again, err := layout.DecodeEnvelope(layout.EncodeEnvelope("k", env.RV, env.UID, env.Payload))
		if err != nil || again.RV != env.RV || again.UID != env.UID || !bytes.Equal(again.Payload, env.Payload) {
			t.Fatalf("re-encoding %+v gave %+v, %v", env, again, err)
		}
		if rv, err := layout.EnvelopeRV(data); err != nil || rv != env.RV {
			t.Fatalf("layout.EnvelopeRV = %q, %v; layout.DecodeEnvelope %q", rv, err, env.RV)
		}
	})
}

// FuzzReverse checks that decoding a reverse entry never panics and that
// encoding round-trips.
func FuzzReverse(f *testing.F) {
	b := layout.AppendReverse(nil, []string{"a", "namespace"}, [][]string{{"x", "y"}, {"default"}})
	f.Add(b)
	f.Add([]byte{0x81, 0xa1, 'a', 0x91, 0xa0})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := layout.DecodeReverse(data)
		if err != nil {
			return
		}
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		values := make([][]string, len(names))
		for i, n := range names {
			values[i] = m[n]
		}
		enc := layout.AppendReverse(nil, names, values)
		if len(enc) == 0 {
			return // only empty value lists
		}
		m2, err := layout.DecodeReverse(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if len(m[n]) > 0 && !slices.Equal(m[n], m2[n]) {
				t.Fatalf("index %q: %q became %q", n, m[n], m2[n])
			}
		}
	})
}

// FuzzIndexKey checks that any value and key round-trip through an index
// key, and that the prefix of a value matches only its own keys.
func FuzzIndexKey(f *testing.F) {
	f.Add("default", "default/a", "defaul")
	f.Add("a\x00b", "k", "a")
	f.Add("\x01\x02", "\x00", "\x01")
	long := strings.Repeat("v", layout.MaxInlineIndexValue)
	f.Add(long+"w", "k", long)
	f.Add(long+"w", "k", long+"x")
	f.Add(long, "k", long+"\x01\x03")
	f.Add("\x00"+long, "\x00", "\x00"+long+"\x00")
	f.Add("\x00\x03", "k", "\x00") // the long value's marker, one byte off an escape
	sums := layout.NewIndexSum("fuzz")
	f.Fuzz(func(t *testing.T, value, key, other string) {
		k := layout.IndexKey(value, key)
		entry := sums.Value(k, value)
		if err := sums.Verify(k, entry); err != nil {
			t.Fatalf("Verify of the entry of %q under %q: %v", key, value, err)
		}
		v, gotKey, err := layout.SplitIndexKey(k, entry)
		if err != nil || v != value || gotKey != key {
			t.Fatalf("split(layout.IndexKey(%q, %q)) = %q, %q, %v", value, key, v, gotKey, err)
		}
		if len(k) > bbolt.MaxKeySize && len(key) < bbolt.MaxKeySize/2 {
			t.Fatalf("the index key of a %d-byte value and a %d-byte key has %d bytes, more than bbolt takes", len(value), len(key), len(k))
		}
		if other != value && bytes.HasPrefix(k, layout.AppendIndexPrefix(nil, other)) {
			t.Fatalf("the prefix of %q matches an entry of %q", other, value)
		}
	})
}

// FuzzSelectPart checks that parsing a select part never panics, that the
// labels of what parses can be read, and that the select part of any
// namespace, key and label round-trips.
func FuzzSelectPart(f *testing.F) {
	p := mkPod("ns", "a", "1")
	p.Labels["tier"] = "web"
	f.Add(layout.AppendSelectPart(nil, "ns/a", p), "ns", "a", "k", "v")
	f.Add(layout.AppendSelectPart(nil, "other", p), "", "x/y", "", "")
	f.Add([]byte{0xc2}, "a", "b", "c", "d")
	f.Add([]byte{0xc0, 0xdf, 0xff, 0xff, 0xff, 0xff}, "", "", "k", "")
	f.Fuzz(func(t *testing.T, data []byte, ns, name, k, v string) {
		if sp, rest, err := layout.ParseSelectPart(data); err == nil {
			m := sp.Labels.Map()
			if len(m) > sp.Labels.Len() || len(rest) > len(data) {
				t.Fatalf("parsed %d labels of %d, %d bytes left of %d", len(m), sp.Labels.Len(), len(rest), len(data))
			}
			for key, val := range m {
				if got, ok := sp.Labels.Lookup(key); !ok || (got != val && sp.Labels.Len() == len(m)) {
					t.Fatalf("Lookup(%q) = %q, %t; Map has %q", key, got, ok, val)
				}
			}
		}
		pod := mkPod(ns, name, "1")
		pod.Labels = map[string]string{k: v, "app": name}
		key := ns + "/" + name
		enc := layout.AppendSelectPart(nil, key, pod)
		sp, rest, err := layout.ParseSelectPart(append(enc, 0x80))
		if err != nil || !bytes.Equal(rest, []byte{0x80}) || !sp.HasMeta {
			t.Fatalf("parse(%x) = %+v, rest %x, %v", enc, sp, rest, err)
		}
		if got := string(sp.NamespaceOf([]byte(key))); got != ns {
			t.Fatalf("namespace %q, want %q", got, ns)
		}
		if got := sp.Labels.Map(); len(got) != len(pod.Labels) || got[k] != pod.Labels[k] || got["app"] != pod.Labels["app"] {
			t.Fatalf("labels %v, want %v", got, pod.Labels)
		}
	})
}

// FuzzMeta checks that decoding a resource's meta never panics, that what
// decodes with a checksum re-encodes to a meta with the same fields, and
// that a meta of this schema never decodes once a byte of it changed.
func FuzzMeta(f *testing.F) {
	m := layout.Meta{Schema: layout.SchemaVersion, Codec: "protobuf", RV: "42", State: layout.StateComplete, Indexes: []string{"namespace"}}
	good, err := layout.EncodeMeta(&m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, 0, byte(1))
	f.Add([]byte{0x80}, 0, byte(0))
	f.Add([]byte{0xc1}, 0, byte(0))
	f.Fuzz(func(t *testing.T, data []byte, at int, flip byte) {
		if m, err := layout.DecodeMeta(data); err == nil {
			again, err := layout.EncodeMeta(&m)
			if err != nil {
				t.Fatal(err)
			}
			if m2, err := layout.DecodeMeta(again); err != nil || m2.RV != m.RV || m2.Schema != m.Schema {
				t.Fatalf("re-encoding %+v gave %+v, %v", m, m2, err)
			}
		}
		if flip == 0 || len(good) == 0 {
			return
		}
		damaged := bytes.Clone(good)
		damaged[uint(at)%uint(len(damaged))] ^= flip
		if got, err := layout.DecodeMeta(damaged); err == nil {
			t.Fatalf("meta with byte %d changed decodes: %+v", uint(at)%uint(len(damaged)), got)
		}
	})
}
