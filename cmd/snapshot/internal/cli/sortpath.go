package cli

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fieldStep is one step of a simple field path: a field (or map key) by
// its JSON name, then an index into a list when index >= 0.
type fieldStep struct {
	name  string
	index int
}

// parseFieldPath parses the JSONPath expr ({.a.b[0].c}, as
// printers.RelaxedJSONPath returns it) into steps when it is a plain path
// of names and list indexes; ok is false for anything else (wildcards,
// filters, quoted keys, ranges, several expressions), which the sorter
// evaluates with client-go's jsonpath.
func parseFieldPath(expr string) (steps []fieldStep, ok bool) {
	p, found := strings.CutPrefix(expr, "{.")
	if !found {
		return nil, false
	}
	if p, found = strings.CutSuffix(p, "}"); !found || p == "" {
		return nil, false
	}
	for _, part := range strings.Split(p, ".") {
		name, idx, hasIndex := strings.Cut(part, "[")
		if name == "" || strings.ContainsFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			return nil, false
		}
		st := fieldStep{name: name, index: -1}
		if hasIndex {
			n, rest, _ := strings.Cut(idx, "]")
			i, err := strconv.Atoi(n)
			if err != nil || i < 0 || rest != "" {
				return nil, false
			}
			st.index = i
		}
		steps = append(steps, st)
	}
	return steps, true
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	index     []int
	omitEmpty bool
}

// jsonFields caches the JSON fields of struct types.
var jsonFields sync.Map // reflect.Type -> map[string]jsonField

// fieldsOf returns the JSON fields of struct type t, inline and embedded
// structs' fields included.
func fieldsOf(t reflect.Type) map[string]jsonField {
	if f, ok := jsonFields.Load(t); ok {
		return f.(map[string]jsonField)
	}
	out := map[string]jsonField{}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" || !sf.IsExported() && !sf.Anonymous {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, idx)
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if _, dup := out[name]; !dup {
				// For the leaf kinds evalFieldPath reads (strings,
				// numbers, booleans) omitzero omits what omitempty does.
				out[name] = jsonField{index: idx, omitEmpty: strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")}
			}
		}
	}
	walk(t, nil)
	jsonFields.Store(t, out)
	return out
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// marshalsItself reports whether encoding/json writes values of t with
// their own MarshalJSON.
func marshalsItself(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)
}

var (
	timeType     = reflect.TypeFor[metav1.Time]()
	quantityType = reflect.TypeFor[resource.Quantity]()
	intOrStrType = reflect.TypeFor[intstr.IntOrString]()
)

// evalFieldPath evaluates steps on a typed object (a pointer to a
// struct) as client-go's jsonpath evaluates them on the object's JSON:
// found is false where the JSON has no value (a nil pointer, an omitted
// empty field, a missing map key); ok is false
// where this evaluation does not know the JSON (custom marshalers but for
// metav1.Time, resource.Quantity and intstr.IntOrString, interfaces, a
// path ending on a struct, list or map) or where jsonpath fails (an index
// out of range), which the caller then evaluates on the object's content.
func evalFieldPath(obj interface{}, steps []fieldStep) (v interface{}, found, ok bool) {
	rv := reflect.ValueOf(obj)
	omitEmpty := false
	for _, st := range steps {
		for rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return nil, false, true
			}
			rv = rv.Elem()
		}
		switch rv.Kind() {
		case reflect.Struct:
			if marshalsItself(rv.Type()) {
				// Its JSON is not its fields (metav1.Time, FieldsV1,
				// RawExtension...).
				return nil, false, false
			}
			f, has := fieldsOf(rv.Type())[st.name]
			if !has {
				return nil, false, true
			}
			rv, omitEmpty = rv.FieldByIndex(f.index), f.omitEmpty
		case reflect.Map:
			if rv.Type().Key().Kind() != reflect.String {
				return nil, false, false
			}
			rv = rv.MapIndex(reflect.ValueOf(st.name).Convert(rv.Type().Key()))
			if !rv.IsValid() {
				return nil, false, true
			}
			omitEmpty = false
		default:
			return nil, false, false
		}
		if st.index >= 0 {
			for rv.Kind() == reflect.Pointer {
				if rv.IsNil() {
					return nil, false, true
				}
				rv = rv.Elem()
			}
			if rv.Kind() != reflect.Slice {
				return nil, false, false
			}
			if st.index >= rv.Len() {
				// jsonpath fails on it: let it say so.
				return nil, false, false
			}
			rv, omitEmpty = rv.Index(st.index), false
		}
	}
	return leafValue(rv, omitEmpty)
}

// leafValue is the JSON value of rv as jsonpath sees it in an object's
// content: string, int64, float64 or bool.
func leafValue(rv reflect.Value, omitEmpty bool) (v interface{}, found, ok bool) {
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, false, true
		}
		rv, omitEmpty = rv.Elem(), false
	}
	switch rv.Type() {
	case timeType:
		t := rv.Interface().(metav1.Time)
		if t.IsZero() {
			return nil, false, false // null in the JSON
		}
		return t.UTC().Format(time.RFC3339), true, true
	case quantityType:
		q := rv.Interface().(resource.Quantity)
		return q.String(), true, true
	case intOrStrType:
		ios := rv.Interface().(intstr.IntOrString)
		if ios.Type == intstr.Int {
			return int64(ios.IntVal), true, true
		}
		return ios.StrVal, true, true
	}
	if marshalsItself(rv.Type()) {
		return nil, false, false
	}
	switch rv.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Bool:
		if omitEmpty && rv.IsZero() {
			return nil, false, true
		}
	}
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), true, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), true, true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true, true
	case reflect.Bool:
		return rv.Bool(), true, true
	}
	return nil, false, false
}
