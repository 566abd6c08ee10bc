package codec_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"

	"github.com/warmcache/warmcache/store/codec"
)

// testSeed returns the seed for the random tests: TEST_RAND_SEED if set,
// else the current time. Tests log it so that a failure can be replayed.
func testSeed(t testing.TB) int64 {
	seed := time.Now().UnixNano()
	if s := os.Getenv("TEST_RAND_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("TEST_RAND_SEED: %v", err)
		}
	}
	t.Logf("seed %d (replay with TEST_RAND_SEED=%d)", seed, seed)
	return seed
}

// extraFuzzerFuncs complete apimachinery's meta fuzzer funcs: metafuzzer
// leaves ManagedFieldsEntry.FieldsV1 nil, which would hide a FieldsV1 that
// aliases the decoder's input. Raw must be JSON for the JSON codec.
func extraFuzzerFuncs(runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(e *metav1.ManagedFieldsEntry, c randfill.Continue) {
			c.FillNoCustom(e)
			if c.Bool() {
				e.FieldsV1 = nil
				return
			}
			set := map[string]interface{}{".": map[string]interface{}{}}
			for i := c.Intn(4); i > 0; i-- {
				set["f:"+c.String(0)] = map[string]interface{}{}
			}
			raw, err := json.Marshal(map[string]interface{}{"f:metadata": set})
			if err != nil {
				panic(err)
			}
			e.FieldsV1 = metav1.NewFieldsV1(string(raw))
		},
	}
}

// newFuzzer returns apimachinery's API fuzzer, as its roundtrip tests use
// it, seeded with seed.
func newFuzzer(seed int64) *randfill.Filler {
	return fuzzer.FuzzerFor(
		fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, extraFuzzerFuncs),
		rand.NewSource(seed),
		runtimeserializer.NewCodecFactory(scheme.Scheme),
	)
}

// externalKinds returns every kind of client-go's scheme except internal
// versions, sorted.
func externalKinds() []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal {
			kinds = append(kinds, gvk)
		}
	}
	slices.SortFunc(kinds, func(a, b schema.GroupVersionKind) int {
		return strings.Compare(kindName(a), kindName(b))
	})
	return kinds
}

// checkRoundTrip encodes obj with c after a prefix, checks that Encode
// appended without touching the prefix or obj and is deterministic, decodes
// it, checks the result is semantically equal to obj, then overwrites the
// encoded bytes and checks the decoded object did not change (Decode must
// not retain its input). It returns the encoding.
func checkRoundTrip(t *testing.T, c codec.Codec, obj runtime.Object) []byte {
	t.Helper()
	orig := obj.DeepCopyObject()
	prefix := []byte("prefix")
	dst := append(make([]byte, 0, 16), prefix...)
	data, err := c.Encode(dst, obj)
	if err != nil {
		t.Fatalf("%s: Encode(%T): %v", c.Name(), obj, err)
	}
	if !bytes.Equal(data[:len(prefix)], prefix) {
		t.Fatalf("%s: Encode did not append to dst: starts with %q", c.Name(), data[:len(prefix)])
	}
	data = data[len(prefix):]
	if !apiequality.Semantic.DeepEqual(orig, obj) {
		t.Fatalf("%s: Encode modified the object: %s", c.Name(), cmp.Diff(orig, obj))
	}
	again, err := c.Encode(nil, obj)
	if err != nil {
		t.Fatalf("%s: second Encode: %v", c.Name(), err)
	}
	if !bytes.Equal(data, again) {
		t.Fatalf("%s: encoding is not deterministic:\n%q\n%q", c.Name(), data, again)
	}

	got, err := c.Decode(data)
	if err != nil {
		t.Fatalf("%s: Decode: %v\ndata: %q", c.Name(), err, data)
	}
	if reflect.TypeOf(got) != reflect.TypeOf(obj) {
		t.Fatalf("%s: Decode returned %T, want %T", c.Name(), got, obj)
	}
	if !apiequality.Semantic.DeepEqual(orig, got) {
		t.Fatalf("%s: round trip changed the object (-want +got):\n%s", c.Name(), cmp.Diff(orig, got))
	}
	wantKind, gotKind := orig.GetObjectKind().GroupVersionKind(), got.GetObjectKind().GroupVersionKind()
	if wantKind != gotKind {
		t.Fatalf("%s: TypeMeta %v, want %v", c.Name(), gotKind, wantKind)
	}

	// The decoded object must own its memory: scribble over the input.
	for i := range data {
		data[i] ^= 0xa5
	}
	if !apiequality.Semantic.DeepEqual(orig, got) {
		t.Fatalf("%s: decoded object changed when the input buffer was overwritten (it aliases the input):\n%s", c.Name(), cmp.Diff(orig, got))
	}
	for i := range data {
		data[i] ^= 0xa5
	}
	return again
}

func kindName(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return fmt.Sprintf("core.%s.%s", gvk.Version, gvk.Kind)
	}
	return fmt.Sprintf("%s.%s.%s", gvk.Group, gvk.Version, gvk.Kind)
}
