package layout

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/warmcache/warmcache/store"
)

// TestAppendMetaIsMsgpack checks that the meta's hand-written encoding is
// the one msgpack.Marshal writes, byte for byte, for the integers and
// lengths at each boundary of msgpack's encodings, the omitempty fields
// set and not, and nil and empty index lists: a file written before it
// and tools that read the meta see no difference.
func TestAppendMetaIsMsgpack(t *testing.T) {
	ints := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
	lens := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	str := func(r *rand.Rand) string { return strings.Repeat("x", lens[r.IntN(len(lens))]) }
	indexes := [][]string{nil, {}, {"namespace"}, {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o"},
		{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"}}
	r := rand.New(rand.NewPCG(1, 2))
	cases := []Meta{{}, {
		Schema: SchemaVersion, Identity: Identity{Version: "v1", Resource: "pods", Kind: "Pod", Scope: store.Scope{Namespace: "ns"}},
		Codec: "protobuf", TypeHash: "sha256:abc", Indexes: []string{"namespace"}, IndexVersion: "1", RV: "12345",
		State: StateComplete, Objects: 10000, NextGen: 3, Created: 1700000000000000000, Updated: 1700000000000000001,
		Cluster: "uid", TransformVersion: "t1",
	}}
	for range 2000 {
		cases = append(cases, Meta{
			Schema:   int(ints[r.IntN(len(ints))]),
			Identity: Identity{Group: str(r), Version: str(r), Resource: str(r), Kind: str(r), Scope: store.Scope{Namespace: str(r), LabelSelector: str(r), FieldSelector: str(r), Shard: str(r)}},
			Codec:    str(r), TypeHash: str(r), Indexes: indexes[r.IntN(len(indexes))], IndexVersion: str(r),
			IndexBuild: r.IntN(2) == 1, RV: str(r), State: State(str(r)), Reason: str(r),
			Objects: ints[r.IntN(len(ints))], Staging: uint64(ints[r.IntN(len(ints))]), NextGen: r.Uint64(),
			Created: ints[r.IntN(len(ints))], Updated: ints[r.IntN(len(ints))], Relisted: ints[r.IntN(len(ints))],
			Cluster: str(r), TransformVersion: str(r),
		})
	}
	for i := range cases {
		m := &cases[i]
		want, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendMeta(nil, m); !bytes.Equal(got, want) {
			t.Fatalf("case %d: appendMeta differs from msgpack.Marshal\n got %x\nwant %x", i, head(got), head(want))
		}
		enc, err := EncodeMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeMeta(enc)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !bytes.Equal(appendMeta(nil, &back), want) {
			t.Fatalf("case %d: the meta does not decode to itself", i)
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 200)] }

func BenchmarkEncodeMeta(b *testing.B) {
	m := Meta{
		Schema: SchemaVersion, Identity: Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec: "protobuf", TypeHash: "sha256:0123456789abcdef0123456789abcdef", Indexes: []string{"namespace", "nodeName"},
		IndexVersion: "1", RV: "123456789", State: StateComplete, Objects: 10000, NextGen: 3,
		Created: 1700000000000000000, Updated: 1700000000000000001, Relisted: 1700000000000000000,
		Cluster: "0123456789abcdef", TransformVersion: "1",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeMeta(&m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendMetaHasEveryField checks, by reflection, that appendMeta
// writes every field of Meta (and of its Identity): a field added to Meta
// and not to appendMeta would be lost from the file with the cases above
// still passing, since they set the fields they name.
func TestAppendMetaHasEveryField(t *testing.T) {
	var m Meta
	fillEvery(t, reflect.ValueOf(&m).Elem(), 1)
	want, err := msgpack.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendMeta(nil, &m); !bytes.Equal(got, want) {
		t.Fatalf("appendMeta of a Meta with every field set differs from msgpack.Marshal: a field is missing from it\n got %x\nwant %x", got, want)
	}
}

// fillEvery sets every field of v, recursively, to a value that is not
// its zero value.
func fillEvery(t *testing.T, v reflect.Value, n int) int {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			n = fillEvery(t, v.Field(i), n)
		}
		return n
	case reflect.String:
		v.SetString(fmt.Sprintf("value-%d", n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(n) * 1000003)
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(uint64(n) * 1000003)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			n = fillEvery(t, s.Index(i), n)
		}
		v.Set(s)
		return n
	default:
		t.Fatalf("fillEvery: a field of kind %s: teach appendMeta and this test about it", v.Kind())
	}
	return n + 1
}
