package codec_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/store/codec"
)

type declaring struct {
	codec.Codec
	retainsNothing bool
}

func (d declaring) RetainsNothing() bool { return d.retainsNothing }

type keeping struct{ codec.Codec }

func (k keeping) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	return k.Codec.Encode(dst, obj)
}

func TestRetainsNothing(t *testing.T) {
	for _, c := range []codec.Codec{codec.Protobuf(scheme.Scheme), codec.JSON(scheme.Scheme), codec.Unstructured(), declaring{codec.Unstructured(), true}} {
		if !codec.RetainsNothing(c) {
			t.Errorf("RetainsNothing(%s %T) = false, want true", c.Name(), c)
		}
	}
	for _, c := range []codec.Codec{keeping{codec.Protobuf(scheme.Scheme)}, declaring{codec.Unstructured(), false}} {
		if codec.RetainsNothing(c) {
			t.Errorf("RetainsNothing(%T) = true for a codec that does not declare it", c)
		}
	}
}
