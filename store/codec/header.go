package codec

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// Format tags: the first byte of every encoding, one per wire format, so
// that data written by one codec is rejected by another instead of being
// misread.
const (
	tagProtobuf     byte = 0x01
	tagJSON         byte = 0x02
	tagUnstructured byte = 0x03
)

// How the TypeMeta of a typed object was set when it was encoded.
const (
	// typeMetaEmpty: apiVersion and kind were both empty, as in objects
	// decoded from protobuf lists and watches by client-go.
	typeMetaEmpty byte = 0
	// typeMetaKind: apiVersion and kind were exactly those of the header.
	typeMetaKind byte = 1
	// typeMetaLiteral: anything else; both strings follow the header's kind.
	typeMetaLiteral byte = 2
)

// typed holds what the codecs for scheme-registered (typed) objects share:
// the scheme and the header that names the kind to decode into.
//
// A typed encoding is:
//
//	tag        1 byte, tagProtobuf or tagJSON
//	mode       1 byte, typeMetaEmpty, typeMetaKind or typeMetaLiteral
//	group      uvarint length, bytes   \
//	version    uvarint length, bytes    } the kind the body decodes into
//	kind       uvarint length, bytes   /
//	apiVersion uvarint length, bytes   \ the object's TypeMeta, only when
//	kind       uvarint length, bytes   / mode is typeMetaLiteral
//	body       the object, in the codec's format
//
// typed is safe for concurrent use: the scheme is only read, and kinds is
// replaced, never modified, under mu.
type typed struct {
	name   string
	tag    byte
	scheme *runtime.Scheme

	// kinds caches the kinds met by Decode, keyed by the raw group,
	// version and kind section of the header, so that decoding allocates
	// no strings for them. The map is immutable once published; writers
	// copy it under mu.
	kinds atomic.Pointer[map[string]*kindInfo]
	mu    sync.Mutex
}

// kindInfo is a kind found in a header and known to the scheme.
type kindInfo struct {
	gvk        schema.GroupVersionKind
	apiVersion string // gvk.GroupVersion().String()
}

// init sets up a zero typed; a nil s means client-go's kubernetes scheme.
func (t *typed) init(name string, tag byte, s *runtime.Scheme) {
	if s == nil {
		s = scheme.Scheme
	}
	t.name, t.tag, t.scheme = name, tag, s
	t.kinds.Store(&map[string]*kindInfo{})
}

// header is a decoded typed header.
type header struct {
	info       *kindInfo
	mode       byte
	apiVersion string // TypeMeta, when mode is typeMetaLiteral
	kind       string
}

// appendHeader appends the header for obj to dst. It chooses the kind to
// record among those the scheme knows for obj's Go type: the one its
// TypeMeta names if any, else the first external one.
func (t *typed) appendHeader(dst []byte, obj runtime.Object) ([]byte, error) {
	if obj == nil {
		return dst, fmt.Errorf("%w: %s encode: nil object", ErrUnsupportedType, t.name)
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return dst, fmt.Errorf("%w: %s encode: nil %T", ErrUnsupportedType, t.name, obj)
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		// The scheme reports an unstructured object's own kind, which
		// would decode into the typed object: not lossless.
		return dst, fmt.Errorf("%w: %s encode %T: use the %s codec", ErrUnsupportedType, t.name, obj, NameUnstructured)
	}
	kinds, _, err := t.scheme.ObjectKinds(obj)
	if err != nil {
		return dst, fmt.Errorf("%w: %s encode %T: %w", ErrUnsupportedType, t.name, obj, err)
	}
	apiVersion, kind := typeMetaOf(obj)
	gvk, mode, found := schema.GroupVersionKind{}, typeMetaEmpty, false
	if apiVersion != "" || kind != "" {
		mode = typeMetaLiteral
		want := schema.FromAPIVersionAndKind(apiVersion, kind)
		for _, k := range kinds {
			if k == want && k.Version != runtime.APIVersionInternal {
				gvk, found = k, true
				if kind == k.Kind && apiVersionIs(apiVersion, k.GroupVersion()) {
					mode = typeMetaKind
				}
				break
			}
		}
	}
	if !found {
		for _, k := range kinds {
			if k.Version != runtime.APIVersionInternal {
				gvk, found = k, true
				break
			}
		}
	}
	if !found {
		return dst, fmt.Errorf("%w: %s encode %T: only internal kinds %v are registered", ErrUnsupportedType, t.name, obj, kinds)
	}
	dst = append(dst, t.tag, mode)
	dst = appendString(dst, gvk.Group)
	dst = appendString(dst, gvk.Version)
	dst = appendString(dst, gvk.Kind)
	if mode == typeMetaLiteral {
		dst = appendString(dst, apiVersion)
		dst = appendString(dst, kind)
	}
	return dst, nil
}

// readHeader parses the header at the start of data and returns it and the
// body that follows, which aliases data (nothing else it returns does).
func (t *typed) readHeader(data []byte) (header, []byte, error) {
	var h header
	if len(data) < 2 {
		return h, nil, fmt.Errorf("%w: %s: %d bytes is too short", ErrDecode, t.name, len(data))
	}
	if data[0] != t.tag {
		return h, nil, fmt.Errorf("%w: %s: format tag %#x is not %#x (written by another codec?)", ErrDecode, t.name, data[0], t.tag)
	}
	h.mode = data[1]
	if h.mode > typeMetaLiteral {
		return h, nil, fmt.Errorf("%w: %s: unknown TypeMeta mode %d", ErrDecode, t.name, h.mode)
	}
	r := reader{data: data, off: 2}
	group, ok1 := r.next()
	version, ok2 := r.next()
	kind, ok3 := r.next()
	if !ok1 || !ok2 || !ok3 {
		return h, nil, fmt.Errorf("%w: %s: truncated header", ErrDecode, t.name)
	}
	key := data[2:r.off]
	if h.info = (*t.kinds.Load())[string(key)]; h.info == nil {
		gvk := schema.GroupVersionKind{Group: string(group), Version: string(version), Kind: string(kind)}
		if gvk.Version == runtime.APIVersionInternal || !t.scheme.Recognizes(gvk) {
			return h, nil, fmt.Errorf("%w: %s: kind %v is not registered in the scheme", ErrDecode, t.name, gvk)
		}
		h.info = t.remember(string(key), gvk)
	}
	if h.mode == typeMetaLiteral {
		apiVersion, ok1 := r.next()
		kind, ok2 := r.next()
		if !ok1 || !ok2 {
			return h, nil, fmt.Errorf("%w: %s: truncated TypeMeta", ErrDecode, t.name)
		}
		h.apiVersion, h.kind = string(apiVersion), string(kind)
	}
	return h, data[r.off:], nil
}

// remember adds a kind to the decode cache and returns its entry.
func (t *typed) remember(key string, gvk schema.GroupVersionKind) *kindInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.kinds.Load()
	if info := old[key]; info != nil {
		return info
	}
	info := &kindInfo{gvk: gvk, apiVersion: gvk.GroupVersion().String()}
	next := make(map[string]*kindInfo, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[key] = info
	t.kinds.Store(&next)
	return info
}

// newObject returns a new, empty object of the header's kind.
func (t *typed) newObject(h header) (runtime.Object, error) {
	obj, err := t.scheme.New(h.info.gvk)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDecode, t.name, err)
	}
	return obj, nil
}

// decode is the Decode of a typed codec: the header, a new object of its
// kind, unmarshal of the body into the object (an error wraps ErrDecode),
// the TypeMeta the header recorded. A panic is an ErrDecode.
func (t *typed) decode(data []byte, unmarshal func(obj runtime.Object, body []byte) error) (obj runtime.Object, err error) {
	defer recoverDecode(t.name, &obj, &err)
	h, body, err := t.readHeader(data)
	if err != nil {
		return nil, err
	}
	if obj, err = t.newObject(h); err != nil {
		return nil, err
	}
	if err := unmarshal(obj, body); err != nil {
		return nil, fmt.Errorf("%w: %s: %v: %w", ErrDecode, t.name, h.info.gvk, err)
	}
	h.setTypeMeta(obj)
	return obj, nil
}

// setTypeMeta sets obj's TypeMeta as the header recorded it.
func (h header) setTypeMeta(obj runtime.Object) {
	switch h.mode {
	case typeMetaEmpty:
		setTypeMeta(obj, "", "")
	case typeMetaKind:
		setTypeMeta(obj, h.info.apiVersion, h.info.gvk.Kind)
	default:
		setTypeMeta(obj, h.apiVersion, h.kind)
	}
}

// typeMetaOf returns obj's apiVersion and kind exactly as set, when obj
// embeds a TypeMeta, or as its ObjectKind reports them otherwise.
func typeMetaOf(obj runtime.Object) (apiVersion, kind string) {
	switch ok := obj.GetObjectKind().(type) {
	case *metav1.TypeMeta:
		return ok.APIVersion, ok.Kind
	case *runtime.TypeMeta:
		return ok.APIVersion, ok.Kind
	default:
		return ok.GroupVersionKind().ToAPIVersionAndKind()
	}
}

// setTypeMeta is the inverse of typeMetaOf.
func setTypeMeta(obj runtime.Object, apiVersion, kind string) {
	switch ok := obj.GetObjectKind().(type) {
	case *metav1.TypeMeta:
		ok.APIVersion, ok.Kind = apiVersion, kind
	case *runtime.TypeMeta:
		ok.APIVersion, ok.Kind = apiVersion, kind
	default:
		ok.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	}
}

// apiVersionIs reports whether apiVersion is gv.String(), without
// allocating.
func apiVersionIs(apiVersion string, gv schema.GroupVersion) bool {
	if gv.Group == "" {
		return apiVersion == gv.Version
	}
	return len(apiVersion) == len(gv.Group)+1+len(gv.Version) &&
		apiVersion[:len(gv.Group)] == gv.Group &&
		apiVersion[len(gv.Group)] == '/' &&
		apiVersion[len(gv.Group)+1:] == gv.Version
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// reader reads length-prefixed byte strings.
type reader struct {
	data []byte
	off  int
}

// next returns the next length-prefixed byte string, aliasing data, and
// false when data is truncated or malformed.
func (r *reader) next() ([]byte, bool) {
	n, k := binary.Uvarint(r.data[r.off:])
	if k <= 0 || n > uint64(len(r.data)-r.off-k) {
		return nil, false
	}
	if k > 1 && r.data[r.off+k-1] == 0 {
		// Not the shortest form, which appendString always writes: one
		// spelling per header keeps the decode cache bounded.
		return nil, false
	}
	start := r.off + k
	r.off = start + int(n)
	return r.data[start:r.off], true
}

// recoverDecode turns a panic in a decoder into an ErrDecode, but for a
// memory fault reading data (a mapped file truncated under it, which
// debug.SetPanicOnFault turns into a panic): not malformed data but a
// damaged file, which the caller that mapped it handles (the bolt store
// reports the file corrupt and checks it), so the fault panics on.
func recoverDecode(name string, obj *runtime.Object, err *error) {
	if r := recover(); r != nil {
		if dataFault(r) {
			panic(r)
		}
		*obj = nil
		*err = fmt.Errorf("%w: %s: malformed data (decoder panicked: %v)", ErrDecode, name, r)
	}
}

// dataFault reports whether r, recovered from a decoder, is a memory
// fault that debug.SetPanicOnFault turned into a panic: a runtime error
// with the faulting address. A nil pointer dereference (a decoder's bug)
// is a runtime error without one, SetPanicOnFault or not.
func dataFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}

// recoverEncode turns a panic in an encoder into an ErrEncode and restores
// dst to its original length.
func recoverEncode(name string, obj runtime.Object, dst []byte, out *[]byte, err *error) {
	if r := recover(); r != nil {
		*out = dst
		*err = fmt.Errorf("%w: %s encode %T: encoder panicked: %v", ErrEncode, name, obj, r)
	}
}
