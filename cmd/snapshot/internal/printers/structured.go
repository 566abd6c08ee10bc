package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/jsondoc"
)

// objectDoc turns objects into the JSON document json and yaml output
// render: the object's JSON as encoding/json writes it (as the API server
// serves it to kubectl), parsed, with its apiVersion and kind set and
// managedFields and the transform applied. Its buffers are reused from
// one object to the next. It is used by one goroutine.
type objectDoc struct {
	doc jsondoc.Doc
	buf bytes.Buffer
	enc *json.Encoder
}

func newObjectDoc() *objectDoc {
	o := &objectDoc{}
	o.enc = json.NewEncoder(&o.buf)
	return o
}

// load makes o's document the object obj, whose kind is kindOf(obj,
// opts.Kind), with opts applied.
func (o *objectDoc) load(obj runtime.Object, opts *Options) error {
	o.buf.Reset()
	var v interface{} = obj
	if u, ok := obj.(*unstructured.Unstructured); ok {
		v = u.Object
	}
	if !opts.ShowManagedFields {
		// Not encoded, rather than encoded, parsed and deleted: the
		// managed fields are a good part of an object's JSON.
		v = withoutManagedFields(v)
	}
	if err := o.enc.Encode(v); err != nil {
		return fmt.Errorf("encode %T as JSON: %w", obj, err)
	}
	d := &o.doc
	if err := d.Parse(o.buf.Bytes()); err != nil {
		return fmt.Errorf("encode %T as JSON: %w", obj, err)
	}
	root := d.Root()
	if !d.IsObject(root) {
		return fmt.Errorf("%T is not a JSON object", obj)
	}
	setKind(d, kindOf(obj, opts.Kind))
	if !opts.ShowManagedFields {
		if md, ok := d.Get(root, "metadata"); ok && d.IsObject(md) {
			d.Delete(md, "managedFields")
		}
	}
	if opts.Transform != nil {
		opts.Transform(d)
	}
	return nil
}

// withoutManagedFields returns v (a typed object or an unstructured
// object's map) without metadata.managedFields: a shallow copy when it has
// some, v itself otherwise. v is not modified.
func withoutManagedFields(v interface{}) interface{} {
	if m, ok := v.(map[string]interface{}); ok {
		md, ok := m["metadata"].(map[string]interface{})
		if !ok || md["managedFields"] == nil {
			return v
		}
		mc := make(map[string]interface{}, len(m))
		for k, x := range m {
			mc[k] = x
		}
		mdc := make(map[string]interface{}, len(md))
		for k, x := range md {
			if k != "managedFields" {
				mdc[k] = x
			}
		}
		mc["metadata"] = mdc
		return mc
	}
	a, err := meta.Accessor(v)
	if err != nil || len(a.GetManagedFields()) == 0 {
		return v
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return v
	}
	c := reflect.New(rv.Elem().Type())
	c.Elem().Set(rv.Elem())
	ca, err := meta.Accessor(c.Interface())
	if err != nil {
		return v
	}
	ca.SetManagedFields(nil)
	return c.Interface()
}

// setKind sets apiVersion and kind from gvk where the document has none,
// as Content does.
func setKind(d *jsondoc.Doc, gvk schema.GroupVersionKind) {
	root := d.Root()
	empty := func(key string) bool {
		v, ok := d.Get(root, key)
		if !ok {
			return true
		}
		s, _ := d.String(v)
		return s == ""
	}
	if gvk.Version != "" && empty("apiVersion") {
		d.SetString(root, "apiVersion", gvk.GroupVersion().String())
	}
	if gvk.Kind != "" && empty("kind") {
		d.SetString(root, "kind", gvk.Kind)
	}
}
