package apiserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/store"
)

// apiError is a failure to answer with a Status.
type apiError struct {
	code    int
	reason  metav1.StatusReason
	message string
	details *details
}

func (e *apiError) Error() string { return e.message }

func (e *apiError) write(w http.ResponseWriter) {
	writeStatus(w, e.code, e.reason, e.message, e.details)
}

func badRequest(format string, args ...any) *apiError {
	return &apiError{code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, message: fmt.Sprintf(format, args...)}
}

// writeError writes err: its Status if it is an *apiError, else 500.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		ae.write(w)
		return
	}
	writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error(), nil)
}

// selection is what a list or watch selects.
type selection struct {
	labels labels.Selector
	fields fields.Selector
	// namespace is the namespace of the path, or of a
	// metadata.namespace=NS field selector.
	namespace string
	limit     int64
	// after is the last key of the previous page (continue).
	after string
}

// continueToken is the content of a continue token.
type continueToken struct {
	RV  string `json:"rv"`
	Key string `json:"key"`
}

// parseSelection reads the query's selectors, limit and continue.
func parseSelection(q url.Values, req request) (selection, error) {
	sel := selection{namespace: req.namespace}
	var err error
	if sel.labels, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return sel, badRequest("unable to parse requirement: %v", err)
	}
	if sel.fields, err = fields.ParseSelector(q.Get("fieldSelector")); err != nil {
		return sel, badRequest("invalid field selector: %v", err)
	}
	for _, r := range sel.fields.Requirements() {
		if !slices.Contains(req.res.FieldNames, r.Field) {
			return sel, badRequest("field label not supported: %s", r.Field)
		}
	}
	if req.name != "" {
		sel.fields = fields.AndSelectors(sel.fields, fields.OneTermEqualSelector("metadata.name", req.name))
	}
	if ns, ok := sel.fields.RequiresExactMatch("metadata.namespace"); ok && req.res.Namespaced {
		if sel.namespace != "" && sel.namespace != ns {
			sel.namespace = "\x00" // selects nothing
		} else {
			sel.namespace = ns
		}
	}
	if l := q.Get("limit"); l != "" {
		if sel.limit, err = strconv.ParseInt(l, 10, 64); err != nil || sel.limit < 0 {
			return sel, badRequest("invalid limit %q", l)
		}
	}
	if c := q.Get("continue"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		var tok continueToken
		if err == nil {
			err = json.Unmarshal(b, &tok)
		}
		if err != nil || tok.Key == "" {
			return sel, badRequest("continue key is not valid: %q", c)
		}
		if tok.RV != req.res.ResourceVersion {
			return sel, &apiError{code: http.StatusGone, reason: metav1.StatusReasonExpired,
				message: "The provided continue parameter is too old to display a consistent list result."}
		}
		sel.after = tok.Key
	}
	return sel, nil
}

// matches reports whether obj passes the field selector (the label
// selector and the namespace are pushed down to the store).
func (sel *selection) matches(res *Resource, obj runtime.Object) bool {
	if sel.fields.Empty() {
		return true
	}
	return sel.fields.Matches(res.Fields(obj))
}

// keyOf is the key of name in namespace ns for res.
func keyOf(res *Resource, ns, name string) string {
	if res.Namespaced {
		return ns + "/" + name
	}
	return name
}

// get answers GET of one object.
func (h *Handler) get(w http.ResponseWriter, r *http.Request, req request) {
	res := req.res
	if res.Namespaced && req.namespace == "" {
		notFound(w)
		return
	}
	item, exists, err := res.Store.GetByKey(keyOf(res, req.namespace, req.name))
	if err != nil {
		writeError(w, fmt.Errorf("read %s %q: %w", groupResource(res), req.name, err))
		return
	}
	obj, ok := item.(runtime.Object)
	if !exists || !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", groupResource(res), req.name),
			&details{Name: req.name, Group: res.GVR.Group, Kind: res.GVR.Resource})
		return
	}
	var buf bytes.Buffer
	if wantsTable(r) {
		t := newTableWriter(h, res, r.URL.Query(), &buf)
		t.header(res.ResourceVersion, "")
		if err := t.row(obj); err != nil {
			writeError(w, err)
			return
		}
		t.end()
	} else if err := encodeObject(&buf, obj, res); err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// list answers LIST of sel: streamed from a Select without a limit, a page
// of keys read one by one with one.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, req request, sel selection) {
	res := req.res
	q := r.URL.Query()
	var objs []runtime.Object
	cont := ""
	paged := sel.limit > 0 || sel.after != ""
	if paged {
		var err error
		if objs, cont, err = page(res, &sel); err != nil {
			writeError(w, err)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	bw := &bufferedWriter{w: w}
	var out itemWriter
	if wantsTable(r) {
		out = newTableWriter(h, res, q, bw)
	} else {
		out = &listWriter{res: res, w: bw}
	}
	out.header(res.ResourceVersion, cont)
	if paged {
		for _, obj := range objs {
			if err := out.row(obj); err != nil {
				break
			}
		}
	} else {
		err := res.Store.Select(r.Context(), store.Selection{Namespace: sel.namespace, Labels: sel.labels}, func(_ string, item interface{}) error {
			obj, ok := item.(runtime.Object)
			if !ok || !sel.matches(res, obj) {
				return nil
			}
			return out.row(obj)
		})
		if err != nil && bw.n == 0 {
			writeError(w, err)
			return
		}
		if err != nil && r.Context().Err() == nil {
			h.opts.Errors(fmt.Errorf("list %s: the response ended early: %w", groupResource(res), err))
		}
	}
	out.end()
	_ = bw.flush()
}

// page returns the objects of one page of a list: up to sel.limit (all
// without) after sel.after, and the continue token of the next page ("" at
// the end). It walks the keys in order and reads the objects one by one,
// so that a page costs the keys and its objects, not those of the pages
// before it.
func page(res *Resource, sel *selection) ([]runtime.Object, string, error) {
	keys := res.Store.ListKeys()
	slices.Sort(keys)
	start := 0
	if sel.after != "" {
		start, _ = slices.BinarySearch(keys, sel.after)
		if start < len(keys) && keys[start] == sel.after {
			start++
		}
	}
	prefix := ""
	if sel.namespace != "" {
		prefix = sel.namespace + "/"
	}
	var objs []runtime.Object
	for i := start; i < len(keys); i++ {
		k := keys[i]
		if prefix != "" && !strings.HasPrefix(k, prefix) {
			continue
		}
		if sel.limit > 0 && int64(len(objs)) == sel.limit {
			b, _ := json.Marshal(continueToken{RV: res.ResourceVersion, Key: keys[i-1]})
			return objs, base64.RawURLEncoding.EncodeToString(b), nil
		}
		item, exists, err := res.Store.GetByKey(k)
		if err != nil {
			return nil, "", fmt.Errorf("read %s %q: %w", groupResource(res), k, err)
		}
		obj, ok := item.(runtime.Object)
		if !exists || !ok {
			continue
		}
		if !sel.labels.Empty() {
			a, err := meta.Accessor(obj)
			if err != nil || !sel.labels.Matches(labels.Set(a.GetLabels())) {
				continue
			}
		}
		if sel.matches(res, obj) {
			objs = append(objs, obj)
		}
	}
	return objs, "", nil
}

// itemWriter writes a list, one object at a time.
type itemWriter interface {
	header(rv, cont string)
	row(obj runtime.Object) error
	end()
}

// listWriter writes a KindList.
type listWriter struct {
	res *Resource
	w   *bufferedWriter
	n   int
	buf bytes.Buffer
}

func (l *listWriter) header(rv, cont string) {
	meta, _ := json.Marshal(metav1.ListMeta{ResourceVersion: rv, Continue: cont})
	fmt.Fprintf(l.w, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, l.res.Kind+"List", l.res.GVR.GroupVersion().String(), meta)
}

func (l *listWriter) row(obj runtime.Object) error {
	l.buf.Reset()
	if l.n > 0 {
		l.buf.WriteByte(',')
	}
	l.n++
	if err := encodeObject(&l.buf, obj, l.res); err != nil {
		return err
	}
	_, err := l.w.Write(l.buf.Bytes())
	return err
}

func (l *listWriter) end() { _, _ = l.w.Write([]byte("]}\n")) }

// encodeObject appends the JSON of obj, with its apiVersion and kind (set
// from res where the object lacks them, as stored typed objects do).
func encodeObject(buf *bytes.Buffer, obj runtime.Object, res *Resource) error {
	var v interface{} = obj
	hasKind := !obj.GetObjectKind().GroupVersionKind().Empty()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		v = u.Object
		hasKind = u.GetKind() != "" && u.GetAPIVersion() != ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", groupResource(res), err)
	}
	if hasKind || len(b) < 2 || b[0] != '{' {
		buf.Write(b)
		return nil
	}
	fmt.Fprintf(buf, `{"kind":%q,"apiVersion":%q`, res.Kind, res.GVR.GroupVersion().String())
	if b[1] != '}' {
		buf.WriteByte(',')
	}
	buf.Write(b[1:])
	return nil
}

// bufferedWriter batches writes to the response, counting what it sent.
type bufferedWriter struct {
	w   http.ResponseWriter
	buf []byte
	n   int64
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) >= 64<<10 {
		if err := b.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (b *bufferedWriter) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	n, err := b.w.Write(b.buf)
	b.n += int64(n)
	b.buf = b.buf[:0]
	return err
}
