package codec_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/warmcache/warmcache/store/codec"
)

// randomJSONValue returns a random value of the types apimachinery's
// decoders put in unstructured content, biased towards the edge cases.
func randomJSONValue(r *rand.Rand, depth int) interface{} {
	n := 9
	if depth >= 4 {
		n = 6 // scalars only
	}
	switch r.Intn(n) {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		edges := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 53, -(1 << 53) - 1, 255, 65536}
		if r.Intn(2) == 0 {
			return edges[r.Intn(len(edges))]
		}
		return r.Int63() - r.Int63()
	case 3:
		edges := []float64{0.5, 2, -3, 1e300, -1e-300, 5e-324, math.MaxFloat64, -math.MaxFloat64,
			math.SmallestNonzeroFloat64, 0.1, float64(1 << 60), math.Copysign(0, -1), 65504, 65505, 1.0000001}
		if r.Intn(2) == 0 {
			return edges[r.Intn(len(edges))]
		}
		return r.NormFloat64() * math.Pow(10, float64(r.Intn(40)-20))
	case 4, 5:
		return randomString(r)
	case 6, 7:
		m := map[string]interface{}{}
		for range r.Intn(6) {
			m[randomString(r)] = randomJSONValue(r, depth+1)
		}
		return m
	default:
		s := make([]interface{}, r.Intn(6))
		for i := range s {
			s[i] = randomJSONValue(r, depth+1)
		}
		return s
	}
}

func randomString(r *rand.Rand) string {
	edges := []string{"", "a", "ünïcødé ✓", "\x00", "\xff\xfe invalid utf-8", `"quoted"\`, "<html>&amp;", "\u2028"}
	if r.Intn(3) == 0 {
		return edges[r.Intn(len(edges))]
	}
	b := make([]byte, r.Intn(20))
	for i := range b {
		b[i] = byte('a' + r.Intn(26))
	}
	return string(b)
}

// TestUnstructuredRoundTrip round-trips random JSON-compatible content:
// nested maps and slices of int64, float64 (integral ones included), bool,
// string (invalid UTF-8 included) and null; and checks that a general CBOR
// decoder reads the encoding as the codec does.
func TestUnstructuredRoundTrip(t *testing.T) {
	iterations := 2000
	if testing.Short() {
		iterations = 300
	}
	r := rand.New(rand.NewSource(testSeed(t)))
	c := codec.Unstructured()
	reference := referenceCBOR()
	for range iterations {
		content := map[string]interface{}{}
		if r.Intn(2) == 0 {
			content["apiVersion"] = "example.com/v1"
			content["kind"] = "Widget"
			content["metadata"] = map[string]interface{}{"name": randomString(r), "namespace": "ns", "resourceVersion": "12"}
		}
		for range r.Intn(8) {
			content[randomString(r)] = randomJSONValue(r, 0)
		}
		data := checkRoundTrip(t, c, &unstructured.Unstructured{Object: content})
		// The encoding is plain CBOR: a general decoder reads the same.
		var decoded map[string]interface{}
		if err := reference.Unmarshal(data[1:], &decoded); err != nil {
			t.Fatalf("reference CBOR decoder: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(content, decoded) {
			t.Fatalf("reference CBOR decoder disagrees:\n%s", cmp.Diff(content, decoded))
		}
	}
}

func TestUnstructuredKeepsGoTypes(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name  string
		value interface{}
		want  interface{} // nil: same as value
	}{
		{"integral float stays float64", float64(2), nil},
		{"int64 stays int64", int64(2), nil},
		{"max int64", int64(math.MaxInt64), nil},
		{"min int64", int64(math.MinInt64), nil},
		{"negative zero keeps its sign", negZero, nil},
		{"float needing 64 bits", 0.1, nil},
		{"invalid utf-8", "\xff\xfe", nil},
		{"nil slice comes back empty", []interface{}(nil), []interface{}{}},
		{"nil map comes back empty", map[string]interface{}(nil), map[string]interface{}{}},
		{"null", nil, nil},
	}
	c := codec.Unstructured()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = tt.value
			}
			in := &unstructured.Unstructured{Object: map[string]interface{}{"v": tt.value, "\xff": "key"}}
			data, err := c.Encode(nil, in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			content := out.(*unstructured.Unstructured).Object
			got, ok := content["v"]
			if !ok {
				t.Fatalf("key v missing from %v", content)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v (%T), want %#v (%T)", got, got, want, want)
			}
			if f, ok := want.(float64); ok && math.Signbit(f) != math.Signbit(got.(float64)) {
				t.Errorf("sign of %v lost", f)
			}
			if content["\xff"] != "key" {
				t.Errorf("invalid utf-8 key lost: %v", content)
			}
		})
	}
}

func TestUnstructuredRejects(t *testing.T) {
	deep := func(levels int) interface{} {
		var v interface{} = "leaf"
		for range levels {
			v = []interface{}{v}
		}
		return v
	}
	tests := []struct {
		name  string
		value interface{}
	}{
		{"NaN", math.NaN()},
		{"+Inf", math.Inf(1)},
		{"int", 1},
		{"int32", int32(1)},
		{"float32", float32(1)},
		{"json.Number", json.Number("1")},
		{"[]string", []string{"a"}},
		{"map[string]string", map[string]string{"a": "b"}},
		{"nested int", map[string]interface{}{"a": []interface{}{1}}},
		{"too deep", deep(10001)},
	}
	c := codec.Unstructured()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Encode(nil, &unstructured.Unstructured{Object: map[string]interface{}{"v": tt.value}})
			if !errors.Is(err, codec.ErrUnsupportedType) {
				t.Fatalf("Encode error %v, want ErrUnsupportedType", err)
			}
		})
	}
	t.Run("deepest accepted", func(t *testing.T) {
		in := &unstructured.Unstructured{Object: map[string]interface{}{"v": deep(9999)}}
		data, err := c.Encode(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(in, out) {
			t.Error("deep content changed")
		}
	})
}
