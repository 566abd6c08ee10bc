package codec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
)

// Sharing is implemented by codecs that can decode a stored object
// sharing, with an object of the same type whose message they are given,
// every part the two encode alike: the informer decodes the old object of
// an update so, relative to the new one, and most of an update's old
// object is then not decoded at all (an update usually changes the status,
// or the metadata, and leaves the rest as it was).
//
// The result is equal (reflect.DeepEqual) to Decode's. It shares memory
// with like: neither may be changed afterwards, which the informer's
// objects never are (they are shared with every handler and lister).
type Sharing interface {
	Codec
	// DecodeSharing decodes data as Decode does, except that a field of
	// the object, or of a struct field of it, whose encoding in data is
	// the same as in likeMsg holds like's value of that field (maps,
	// slices and pointers shared, not copied). likeMsg must be like's
	// protobuf message, as package wire remembers it. An object of
	// another type than like's is decoded as Decode does.
	DecodeSharing(data []byte, like runtime.Object, likeMsg []byte) (runtime.Object, error)
	// Message returns the protobuf message of the object data encodes
	// (data as Encode wrote it, aliased, not copied): the likeMsg of
	// that object when it is decoded from data and another is decoded
	// sharing with it. A store's relist, which decodes both objects of a
	// changed key from the file, shares so.
	Message(data []byte) ([]byte, error)
}

// shareDepth is how many levels of nested messages unmarshalSharing
// compares field by field below the object: the object's own fields
// (metadata, spec, status), theirs (labels, containers, conditions) and
// one more. Below it, a field that differs is decoded whole.
const shareDepth = 3

// unmarshalSharing unmarshals msg into dst, a pointer to an empty struct
// with generated protobuf code, taking from like (a value of dst's type,
// decoded from likeMsg) each field whose occurrences in msg are byte for
// byte those in likeMsg. A field that differs and holds a message of a
// struct type is unmarshalled the same way, down to depth levels; the
// rest is unmarshalled by the type's generated code from msg's own bytes,
// in msg's order. A message whose fields are not in field-number order
// (the generated code always writes them in order) is unmarshalled whole,
// so the walk is linear in both messages. Malformed msg is left to the
// generated code, whose error is returned.
//
// buf is scratch space for the spans of every level: each level appends
// its own after its callers' and truncates them when it returns.
func unmarshalSharing(dst, like reflect.Value, msg, likeMsg []byte, depth int, buf *[]span) error {
	u, ok := dst.Interface().(protoUnmarshaler)
	if !ok {
		return fmt.Errorf("%s: %w", dst.Type(), errNotUnmarshaler)
	}
	fields := protoFieldsOf(dst.Type().Elem())
	if fields == nil {
		return u.Unmarshal(msg)
	}
	base := len(*buf)
	defer func() { *buf = (*buf)[:base] }()
	// A later append may move *buf: the spans taken before keep the
	// array they were parsed into, which nothing writes again.
	var ok2 bool
	*buf, ok = appendSpans(*buf, msg)
	spans := (*buf)[base:]
	mid := len(*buf)
	*buf, ok2 = appendSpans(*buf, likeMsg)
	likeSpans := (*buf)[mid:]
	if !ok || !ok2 {
		return u.Unmarshal(msg)
	}
	start, end := 0, 0 // the bytes of msg still to unmarshal, in order
	flush := func() error {
		if start < end {
			if err := u.Unmarshal(msg[start:end]); err != nil {
				return err
			}
		}
		return nil
	}
	k := 0 // likeSpans[k:] are the occurrences of numbers not yet reached
	for i := 0; i < len(spans); {
		num := spans[i].num
		j := runEnd(spans, i)
		for k < len(likeSpans) && likeSpans[k].num < num {
			k++
		}
		theirs := likeSpans[k:runEnd(likeSpans, k)]
		if len(theirs) > 0 && theirs[0].num != num {
			theirs = nil
		}
		f, known := fields[num]
		switch {
		case !known:
			// Unknown to the type: decoded in place (skipped).
		case sameOccurrences(msg, spans[i:j], likeMsg, theirs):
			if err := flush(); err != nil {
				return err
			}
			dst.Elem().Field(f.index).Set(like.Elem().Field(f.index))
			start, end, i = spans[j-1].end, spans[j-1].end, j
			continue
		case f.message && depth > 0 && j == i+1:
			if len(theirs) != 1 || (f.pointer && like.Elem().Field(f.index).IsNil()) {
				break
			}
			sub, ok := payload(msg, spans[i])
			likeSub, ok2 := payload(likeMsg, theirs[0])
			if !ok || !ok2 {
				break
			}
			if err := flush(); err != nil {
				return err
			}
			fd, fl := dst.Elem().Field(f.index), like.Elem().Field(f.index)
			if f.pointer {
				fd.Set(reflect.New(f.elem))
			} else {
				fd, fl = fd.Addr(), fl.Addr()
			}
			if err := unmarshalSharing(fd, fl, sub, likeSub, depth-1, buf); err != nil {
				return err
			}
			start, end, i = spans[i].end, spans[i].end, j
			continue
		}
		if start == end {
			start = spans[i].start
		}
		end, i = spans[j-1].end, j
	}
	return flush()
}

// span is one field occurrence of a message: its number and its bytes,
// tag included, msg[start:end].
type span struct {
	num        protowire.Number
	start, end int
}

// spanBufs recycles the span scratch of DecodeSharing's calls; one grown
// past maxPooledSpans by a message of very many fields is dropped.
var spanBufs = sync.Pool{New: func() any { b := make([]span, 0, 256); return &b }}

const maxPooledSpans = 4096

func putSpans(buf *[]span) {
	if cap(*buf) <= maxPooledSpans {
		*buf = (*buf)[:0]
		spanBufs.Put(buf)
	}
}

// appendSpans appends to out msg's field occurrences, false if msg is not
// a well-formed sequence of fields in field-number order (each number's
// occurrences then form one run).
func appendSpans(out []span, msg []byte) ([]span, bool) {
	base := len(out)
	for off := 0; off < len(msg); {
		num, typ, n := protowire.ConsumeTag(msg[off:])
		if n < 0 {
			return out, false
		}
		if len(out) > base && num < out[len(out)-1].num {
			return out, false
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[off+n:])
		if m < 0 {
			return out, false
		}
		out = append(out, span{num: num, start: off, end: off + n + m})
		off += n + m
	}
	return out, true
}

// runEnd returns the end of the run of occurrences of s[i].num from i.
func runEnd(s []span, i int) int {
	j := i
	for j < len(s) && s[j].num == s[i].num {
		j++
	}
	return j
}

// sameOccurrences reports whether the occurrences a of msg and b of
// likeMsg are the same bytes: then the field decodes to equal values.
func sameOccurrences(msg []byte, a []span, likeMsg []byte, b []span) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k := range a {
		if !bytes.Equal(msg[a[k].start:a[k].end], likeMsg[b[k].start:b[k].end]) {
			return false
		}
	}
	return true
}

// payload returns the value of a length-delimited field occurrence.
func payload(msg []byte, s span) ([]byte, bool) {
	b := msg[s.start:s.end]
	_, typ, n := protowire.ConsumeTag(b)
	if n < 0 || typ != protowire.BytesType {
		return nil, false
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		return nil, false
	}
	return v, true
}

// protoField is a struct field with a protobuf tag.
type protoField struct {
	index int
	// message: the field holds one message of a struct type (by value or
	// by pointer) with generated protobuf code; pointer tells which, and
	// elem is the struct type.
	message bool
	pointer bool
	elem    reflect.Type
}

var protoFields sync.Map // reflect.Type (struct) -> map[protowire.Number]protoField

// protoFieldsOf returns the fields of struct type t by protobuf field
// number, from the tags the generator writes (`protobuf:"bytes,2,opt,
// name=spec"`); nil if t has none.
func protoFieldsOf(t reflect.Type) map[protowire.Number]protoField {
	if v, ok := protoFields.Load(t); ok {
		return v.(map[protowire.Number]protoField)
	}
	var m map[protowire.Number]protoField
	if !generated(t) {
		v, _ := protoFields.LoadOrStore(t, m)
		return v.(map[protowire.Number]protoField)
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("protobuf")
		if !ok || !sf.IsExported() {
			continue
		}
		parts := strings.Split(tag, ",")
		if len(parts) < 3 {
			continue
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n <= 0 {
			continue
		}
		f := protoField{index: i}
		ft := sf.Type
		if parts[0] == "bytes" && parts[2] != "rep" {
			switch {
			case ft.Kind() == reflect.Struct && reflect.PointerTo(ft).Implements(unmarshalerType):
				f.message, f.elem = true, ft
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && ft.Implements(unmarshalerType):
				f.message, f.pointer, f.elem = true, true, ft.Elem()
			}
		}
		if m == nil {
			m = make(map[protowire.Number]protoField)
		}
		m[protowire.Number(n)] = f
	}
	v, _ := protoFields.LoadOrStore(t, m)
	return v.(map[protowire.Number]protoField)
}

var unmarshalerType = reflect.TypeFor[protoUnmarshaler]()

// generated reports whether t's Unmarshal is known to be go-to-protobuf's
// generated code, which decodes each field on its own: then the fields
// of a message may be decoded apart and the rest set. Kubernetes' API
// types are; a type elsewhere may hand-write an Unmarshal that ties its
// fields together, and is decoded whole.
func generated(t reflect.Type) bool {
	p := t.PkgPath()
	return strings.HasPrefix(p, "k8s.io/api/") || strings.HasPrefix(p, "k8s.io/apimachinery/")
}

// errNotUnmarshaler: a type without generated protobuf code.
var errNotUnmarshaler = errors.New("type does not implement protobuf unmarshalling")
