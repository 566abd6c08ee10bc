package printers

import (
	"io"
	"iter"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/jsondoc"
)

// The List document kubectl get prints around several objects; items are
// streamed between its head and tail. Keys are in the order kubectl prints
// them (sorted).
const (
	jsonListHead      = "{\n    \"apiVersion\": \"v1\",\n    \"items\": ["
	jsonListTail      = "],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n"
	jsonItemIndent    = "        "
	yamlDocumentBreak = "---\n"
)

// content returns the map templates see for obj (managedFields removed
// unless opts.ShowManagedFields).
func content(obj runtime.Object, opts *Options) (map[string]interface{}, error) {
	m, err := Content(obj, opts.Kind)
	if err != nil {
		return nil, err
	}
	if !opts.ShowManagedFields {
		if md, ok := m["metadata"].(map[string]interface{}); ok {
			delete(md, "managedFields")
		}
	}
	return m, nil
}

// jsonPrinter writes JSON, one object or a List, as kubectl -o json does
// (json.MarshalIndent of unstructured objects: sorted keys, four spaces,
// HTML characters escaped). Objects are rendered on every core, written
// in order.
type jsonPrinter struct{ opts Options }

func (p *jsonPrinter) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	prefix := ""
	if p.opts.List {
		if _, err := io.WriteString(w, jsonListHead); err != nil {
			return err
		}
		prefix = jsonItemIndent
	}
	n := 0
	var sep []byte
	err := renderOrdered(objs, func(o *objectDoc, obj runtime.Object, dst []byte) ([]byte, bool, error) {
		if err := o.load(obj, &p.opts); err != nil {
			return dst, false, err
		}
		return o.doc.AppendJSON(dst, o.doc.Root(), prefix), false, nil
	}, func(b []byte, _ bool) error {
		sep = sep[:0]
		if p.opts.List {
			if n > 0 {
				sep = append(sep, ',')
			}
			sep = append(sep, "\n"+jsonItemIndent...)
		}
		n++
		if _, err := w.Write(sep); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if !p.opts.List {
			_, err := w.Write([]byte{'\n'})
			return err
		}
		return nil
	})
	if err != nil || !p.opts.List {
		return err
	}
	tail := jsonListTail
	if n > 0 {
		tail = "\n    " + tail
	}
	_, err = io.WriteString(w, tail)
	return err
}

// yamlPrinter writes YAML, one object per document or a List, as kubectl
// -o yaml does (sigs.k8s.io/yaml.Marshal of unstructured objects, the List
// as one document). Objects are rendered on every core, written in order.
type yamlPrinter struct{ opts Options }

func (p *yamlPrinter) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	if p.opts.List {
		head, l := jsondoc.BeginYAMLList(nil)
		if _, err := w.Write(head); err != nil {
			return err
		}
		var buf []byte
		err := renderOrdered(objs, func(o *objectDoc, obj runtime.Object, dst []byte) ([]byte, bool, error) {
			if err := o.load(obj, &p.opts); err != nil {
				return dst, false, err
			}
			out, needBreak := o.doc.AppendListItem(dst, o.doc.Root())
			return out, needBreak, nil
		}, func(b []byte, needBreak bool) error {
			buf = l.Append(buf[:0], b, needBreak)
			_, err := w.Write(buf)
			return err
		})
		if err != nil {
			return err
		}
		_, err = w.Write(l.End(buf[:0]))
		return err
	}
	n := 0
	return renderOrdered(objs, func(o *objectDoc, obj runtime.Object, dst []byte) ([]byte, bool, error) {
		if err := o.load(obj, &p.opts); err != nil {
			return dst, false, err
		}
		return o.doc.AppendYAML(dst, o.doc.Root()), false, nil
	}, func(b []byte, _ bool) error {
		if n > 0 {
			if _, err := io.WriteString(w, yamlDocumentBreak); err != nil {
				return err
			}
		}
		n++
		_, err := w.Write(b)
		return err
	})
}
