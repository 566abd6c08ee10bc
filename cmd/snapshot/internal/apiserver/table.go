package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// wantsTable reports whether the client asks for a Table (kubectl get
// does: application/json;as=Table;v=v1;g=meta.k8s.io).
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		params := strings.Split(part, ";")
		as, g := "", ""
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch k {
			case "as":
				as = v
			case "g":
				g = v
			}
		}
		if as == "Table" && g == "meta.k8s.io" {
			return true
		}
	}
	return false
}

// tableWriter writes a metav1.Table (meta.k8s.io/v1) row by row, its rows
// holding the object as includeObject asks (None, Metadata by default,
// Object).
type tableWriter struct {
	h       *Handler
	res     *Resource
	w       io.Writer
	include string
	now     time.Time
	n       int
	buf     bytes.Buffer
}

func newTableWriter(h *Handler, res *Resource, q url.Values, w io.Writer) *tableWriter {
	include := q.Get("includeObject")
	if include == "" {
		include = "Metadata"
	}
	return &tableWriter{h: h, res: res, w: w, include: include, now: h.opts.Now()}
}

func (t *tableWriter) header(rv, cont string) {
	var cols []metav1.TableColumnDefinition
	for i, c := range t.res.Table.Columns {
		// The name is kubectl's header (kubectl prints names upper-case).
		d := metav1.TableColumnDefinition{Name: c.Name, Type: "string", Priority: c.Priority, Description: c.Name + " column of kubectl get"}
		if i == 0 && c.Name == "NAME" {
			d.Format = "name"
		}
		cols = append(cols, d)
	}
	md, _ := json.Marshal(metav1.ListMeta{ResourceVersion: rv, Continue: cont})
	cd, _ := json.Marshal(cols)
	fmt.Fprintf(t.w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":%s,"columnDefinitions":%s,"rows":[`, md, cd)
}

func (t *tableWriter) row(obj runtime.Object) error {
	cells, err := t.res.Table.Row(obj, t.now)
	if err != nil {
		return err
	}
	t.buf.Reset()
	if t.n > 0 {
		t.buf.WriteByte(',')
	}
	t.n++
	c, err := json.Marshal(cells)
	if err != nil {
		return err
	}
	t.buf.WriteString(`{"cells":`)
	t.buf.Write(c)
	switch t.include {
	case "None":
	case "Object":
		t.buf.WriteString(`,"object":`)
		if err := encodeObject(&t.buf, obj, t.res); err != nil {
			return err
		}
	default:
		t.buf.WriteString(`,"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":`)
		if err := encodeMetadata(&t.buf, obj); err != nil {
			return err
		}
		t.buf.WriteByte('}')
	}
	t.buf.WriteByte('}')
	_, err = t.w.Write(t.buf.Bytes())
	return err
}

func (t *tableWriter) end() { _, _ = io.WriteString(t.w, "]}\n") }

// encodeMetadata appends the JSON of obj's metadata.
func encodeMetadata(buf *bytes.Buffer, obj runtime.Object) error {
	var v interface{}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		v = u.Object["metadata"]
	} else if oma, ok := obj.(metav1.ObjectMetaAccessor); ok {
		v = oma.GetObjectMeta()
	} else {
		return fmt.Errorf("metadata of %T: not an object with metadata", obj)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}
