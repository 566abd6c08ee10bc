package codec_test

import (
	"errors"
	"sync"
	"testing"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/codec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// allCodecs returns every codec, each with the object it is for.
func allCodecs() []codec.Codec {
	return []codec.Codec{codec.Protobuf(scheme.Scheme), codec.JSON(scheme.Scheme), codec.Unstructured()}
}

// forCodec returns obj as c stores it: unstructured for Unstructured.
func forCodec(t *testing.T, c codec.Codec, obj runtime.Object) runtime.Object {
	t.Helper()
	if c.Name() != codec.NameUnstructured {
		return obj
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// byteFieldObjects returns objects with every kind of byte-slice field the
// protobuf decoder fills: map values, FieldsV1, RawExtension, plain bytes.
func byteFieldObjects() map[string]runtime.Object {
	return map[string]runtime.Object{
		"pod with managedFields": podgen.Pod(7),
		"secret data": &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
			Data:       map[string][]byte{"tls.key": []byte("-----BEGIN KEY-----\x00\xff"), "empty": {}},
			StringData: map[string]string{"a": "b"},
		},
		"configmap binaryData": &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "c"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2, 3, 250}},
			Data:       map[string]string{"k": "v"},
		},
		"controllerrevision rawextension": &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: "r"},
			Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"metadata":{"labels":{"a":"b"}}}}}`)},
			Revision:   3,
		},
		"csr request": &certv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "csr"},
			Spec:       certv1.CertificateSigningRequestSpec{Request: []byte("-----BEGIN CERTIFICATE REQUEST-----"), SignerName: "x/y"},
			Status:     certv1.CertificateSigningRequestStatus{Certificate: []byte("cert")},
		},
	}
}

// TestDecodeDoesNotAliasInput checks that decoded objects survive their
// input being overwritten, as a bbolt mmap is after the transaction. The
// fuzzed round trip does the same for every kind; this covers each kind of
// byte field with data for certain.
func TestDecodeDoesNotAliasInput(t *testing.T) {
	for name, obj := range byteFieldObjects() {
		for _, c := range allCodecs() {
			t.Run(name+"/"+c.Name(), func(t *testing.T) {
				checkRoundTrip(t, c, forCodec(t, c, obj))
			})
		}
	}
}

// TestTypeMeta checks that Decode restores TypeMeta exactly as Encode saw
// it, including for a Go type registered under many kinds.
func TestTypeMeta(t *testing.T) {
	tests := []struct {
		name             string
		obj              runtime.Object
		apiVersion, kind string
	}{
		{"empty, as from protobuf lists", &corev1.Pod{}, "", ""},
		{"the kind, as from JSON", &corev1.Pod{}, "v1", "Pod"},
		{"the kind in a group", &appsv1.Deployment{}, "apps/v1", "Deployment"},
		{"another registered kind of the type", &appsv1.Deployment{}, "extensions/v1beta1", "Deployment"},
		{"kind only", &corev1.Pod{}, "", "Pod"},
		{"apiVersion only", &corev1.Pod{}, "v1", ""},
		{"unknown version", &corev1.Pod{}, "v2", "Pod"},
		{"malformed apiVersion", &corev1.Pod{}, "a/b/c", "Pod"},
		{"type registered in every group, first", &metav1.ListOptions{}, "v1", "ListOptions"},
		{"type registered in every group, other", &metav1.ListOptions{}, "apps/v1", "ListOptions"},
		{"type registered in every group, empty", &metav1.ListOptions{}, "", ""},
		{"unversioned type", &metav1.Status{}, "v1", "Status"},
	}
	for _, tt := range tests {
		for _, c := range []codec.Codec{codec.Protobuf(nil), codec.JSON(nil)} {
			t.Run(tt.name+"/"+c.Name(), func(t *testing.T) {
				obj := tt.obj.DeepCopyObject()
				setTypeMeta(obj, tt.apiVersion, tt.kind)
				data, err := c.Encode(nil, obj)
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.Decode(data)
				if err != nil {
					t.Fatal(err)
				}
				tm := got.GetObjectKind().(*metav1.TypeMeta)
				if tm.APIVersion != tt.apiVersion || tm.Kind != tt.kind {
					t.Errorf("TypeMeta %q %q, want %q %q", tm.APIVersion, tm.Kind, tt.apiVersion, tt.kind)
				}
			})
		}
	}
}

// notRegistered is a runtime.Object no scheme knows.
type notRegistered struct {
	metav1.TypeMeta
	corev1.Pod
}

func (n *notRegistered) DeepCopyObject() runtime.Object { c := *n; return &c }
func (n *notRegistered) GetObjectKind() schema.ObjectKind {
	return &n.TypeMeta
}

func TestEncodeUnsupported(t *testing.T) {
	var nilPod *corev1.Pod
	var nilUnstructured *unstructured.Unstructured
	pod := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Pod"}}
	tests := []struct {
		name  string
		codec codec.Codec
		obj   runtime.Object
	}{
		{"nil object", codec.Protobuf(nil), nil},
		{"nil pointer", codec.Protobuf(nil), nilPod},
		{"unregistered type", codec.Protobuf(nil), &notRegistered{}},
		{"unstructured to protobuf", codec.Protobuf(nil), pod},
		{"nil object to json", codec.JSON(nil), nil},
		{"nil pointer to json", codec.JSON(nil), nilPod},
		{"unregistered type to json", codec.JSON(nil), &notRegistered{}},
		// JSON could write it, but would decode a *corev1.Pod.
		{"unstructured to json", codec.JSON(nil), pod},
		{"internal-only type", codec.JSON(nil), &metav1.InternalEvent{}},
		{"typed to unstructured", codec.Unstructured(), &corev1.Pod{}},
		{"nil object to unstructured", codec.Unstructured(), nil},
		{"nil unstructured", codec.Unstructured(), nilUnstructured},
		{"unstructured list", codec.Unstructured(), &unstructured.UnstructuredList{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("kept")
			out, err := tt.codec.Encode(dst, tt.obj)
			if !errors.Is(err, codec.ErrUnsupportedType) {
				t.Fatalf("Encode error %v, want ErrUnsupportedType", err)
			}
			if string(out) != "kept" {
				t.Errorf("Encode returned %q on error, want dst unchanged", out)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	pod := podgen.Pod(1)
	good := map[string][]byte{}
	for _, c := range allCodecs() {
		data, err := c.Encode(nil, forCodec(t, c, pod))
		if err != nil {
			t.Fatal(err)
		}
		good[c.Name()] = data
	}
	pb := good[codec.NameProtobuf]
	withKind := func(group, version, kind string) []byte {
		b := []byte{pb[0], 0}
		for _, s := range []string{group, version, kind} {
			b = append(b, byte(len(s)))
			b = append(b, s...)
		}
		return b
	}
	tests := []struct {
		name  string
		codec codec.Codec
		data  []byte
	}{
		{"nil", codec.Protobuf(nil), nil},
		{"one byte", codec.Protobuf(nil), pb[:1]},
		{"json data", codec.Protobuf(nil), good[codec.NameJSON]},
		{"unstructured data", codec.Protobuf(nil), good[codec.NameUnstructured]},
		{"truncated header", codec.Protobuf(nil), pb[:5]},
		{"truncated body", codec.Protobuf(nil), pb[:len(pb)-10]},
		{"unknown TypeMeta mode", codec.Protobuf(nil), append([]byte{pb[0], 9}, pb[2:]...)},
		{"length past the end", codec.Protobuf(nil), []byte{pb[0], 0, 0x80, 0x80, 0x80, 0x80, 0x08}},
		{"length not in shortest form", codec.Protobuf(nil), append([]byte{pb[0], 0, 0x80, 0x00, 0x02, 'v', '1', 0x03, 'P', 'o', 'd'}, pb[len(withKind("", "v1", "Pod")):]...)},
		{"unregistered kind", codec.Protobuf(nil), withKind("example.com", "v1", "Widget")},
		{"internal version", codec.Protobuf(nil), withKind("", "__internal", "WatchEvent")},
		{"garbage body", codec.Protobuf(nil), append(withKind("", "v1", "Pod"), 0xff, 0xff, 0xff)},
		{"protobuf data to json", codec.JSON(nil), pb},
		{"json truncated", codec.JSON(nil), good[codec.NameJSON][:len(good[codec.NameJSON])-1]},
		{"unstructured empty", codec.Unstructured(), nil},
		{"protobuf data to unstructured", codec.Unstructured(), pb},
		{"unstructured truncated", codec.Unstructured(), good[codec.NameUnstructured][:100]},
		{"unstructured null", codec.Unstructured(), []byte{good[codec.NameUnstructured][0], 0xf6}},
		{"unstructured array", codec.Unstructured(), []byte{good[codec.NameUnstructured][0], 0x80}},
		{"unstructured trailing data", codec.Unstructured(), append(append([]byte{}, good[codec.NameUnstructured]...), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.codec.Decode(tt.data)
			if !errors.Is(err, codec.ErrDecode) {
				t.Fatalf("Decode error %v, want ErrDecode", err)
			}
			if obj != nil {
				t.Errorf("Decode returned %T with an error", obj)
			}
		})
	}
}

// TestConcurrentUse encodes and decodes many kinds from many goroutines
// with shared codecs, for the race detector (the kind cache is filled while
// other goroutines read it).
func TestConcurrentUse(t *testing.T) {
	objs := byteFieldObjects()
	codecs := allCodecs()
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(objs)*len(codecs))
	for range 8 {
		for _, obj := range objs {
			for _, c := range codecs {
				obj := forCodec(t, c, obj)
				wg.Go(func() {
					data, err := c.Encode(nil, obj)
					if err == nil {
						_, err = c.Decode(data)
					}
					errs <- err
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
