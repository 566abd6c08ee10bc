package codec_test

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/store/codec"
)

// fragile has protobuf and JSON methods that panic on command, standing in
// for generated or custom (un)marshalling code that panics on bad input.
type fragile struct {
	metav1.TypeMeta `json:",inline"`
	PanicOnEncode   bool `json:"panicOnEncode"`
}

func (f *fragile) DeepCopyObject() runtime.Object { c := *f; return &c }
func (f *fragile) Size() int                      { return 1 }
func (f *fragile) MarshalToSizedBuffer(b []byte) (int, error) {
	if f.PanicOnEncode {
		panic("encoder bug")
	}
	b[len(b)-1] = 0
	return 1, nil
}

// nilDeref makes fragile's Unmarshal dereference a nil pointer instead
// of panicking with a value.
var nilDeref bool

func (f *fragile) Unmarshal([]byte) error {
	if nilDeref {
		var p *fragile
		return p.never()
	}
	panic("decoder bug")
}

func (f *fragile) never() error               { return errors.New(f.Kind) }
func (f *fragile) UnmarshalJSON([]byte) error { panic("decoder bug") }

func TestPanicsBecomeErrors(t *testing.T) {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Fragile"}, &fragile{})
	for _, c := range []codec.Codec{codec.Protobuf(s), codec.JSON(s)} {
		t.Run(c.Name(), func(t *testing.T) {
			data, err := c.Encode(nil, &fragile{})
			if err != nil {
				t.Fatal(err)
			}
			obj, err := c.Decode(data)
			if !errors.Is(err, codec.ErrDecode) || obj != nil {
				t.Errorf("Decode = %v, %v; want nil, ErrDecode", obj, err)
			}
		})
	}
	t.Run("encode", func(t *testing.T) {
		out, err := codec.Protobuf(s).Encode([]byte("kept"), &fragile{PanicOnEncode: true})
		if !errors.Is(err, codec.ErrEncode) {
			t.Errorf("Encode error %v, want ErrEncode", err)
		}
		if string(out) != "kept" {
			t.Errorf("Encode returned %q on error, want dst unchanged", out)
		}
	})
}
