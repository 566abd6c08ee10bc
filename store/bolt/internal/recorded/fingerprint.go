package recorded

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// Fingerprint identifies the structure of the Go type objects decode into
// (prototype's, else the one client-go's scheme registers for group,
// version and kind): a hash of every field's name, type and struct tags,
// recursively.
// Protobuf and JSON decoding silently drop the fields the binary's types
// do not know, so objects stored by a binary whose types lacked a field
// lack it too; a changed fingerprint discards them (invariant 3). The
// fingerprint is "" when the type is unknown (a custom resource decoded
// into unstructured objects, which keep every field).
func Fingerprint(prototype runtime.Object, group, version, kind string) string {
	var t reflect.Type
	if prototype != nil {
		t = reflect.TypeOf(prototype)
	} else if kind != "" {
		obj, err := scheme.Scheme.New(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
		if err != nil {
			return ""
		}
		t = reflect.TypeOf(obj)
	}
	if t == nil {
		return ""
	}
	var b strings.Builder
	writeType(&b, t, map[reflect.Type]bool{})
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// writeType writes a description of t that changes when any field reachable
// from t is added, removed, renamed, retyped or retagged. A named type is
// described in full once and by name after that (recursive types).
func writeType(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	if t.Name() != "" {
		fmt.Fprintf(b, "%s.%s", t.PkgPath(), t.Name())
		if seen[t] {
			return
		}
		seen[t] = true
	}
	fmt.Fprintf(b, "<%s", t.Kind())
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		writeType(b, t.Elem(), seen)
	case reflect.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		writeType(b, t.Elem(), seen)
	case reflect.Map:
		writeType(b, t.Key(), seen)
		writeType(b, t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(b, "{%s %q ", f.Name, f.Tag)
			writeType(b, f.Type, seen)
			b.WriteByte('}')
		}
	}
	b.WriteByte('>')
}
