// Package printers writes Kubernetes objects in the output formats of
// kubectl get: table, wide, json, yaml and name.
//
// A Printer is one method: it takes a sequence of objects and writes them as
// one document (a table, a List, one object), pulling objects one at a time,
// so that printing a large set keeps memory proportional to one object (a
// table holds at most FlushRows rendered rows to align its columns). The
// printers of one row per object (tables, custom columns, names) are also
// RowPrinters: their rows can be rendered, held and printed in another
// order.
package printers

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/jsondoc"
)

// Printer writes objects in one output format.
type Printer interface {
	// Print writes the objects objs yields, in order, to w as one document.
	// It stops at the first error objs yields or writing returns, and
	// returns it; what was written until then stays written. Print does
	// not modify the objects.
	Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error
}

// The output formats.
const (
	Table = "table"
	Wide  = "wide"
	JSON  = "json"
	YAML  = "yaml"
	Name  = "name"
)

// Formats lists every output format, in the order help texts show them.
var Formats = []string{Table, Wide, JSON, YAML, Name}

// AllFormats is Formats and the template formats, as help texts show them.
var AllFormats = append(slices.Clone(Formats), TemplateFormats...)

// ErrUnknownFormat is returned by New for a format not in Formats.
var ErrUnknownFormat = errors.New("unknown output format")

// FlushRows is the number of table rows held to align columns; beyond it a
// table is written in blocks that keep the widths of the earlier blocks as
// minimums (a column only ever widens).
const FlushRows = 1000

// Options configures New.
type Options struct {
	// Format is one of Formats. Default: Table.
	Format string
	// Kind is the kind of the objects. Objects decoded from a cache often
	// have no apiVersion and kind; json and yaml output sets them from
	// Kind, and name output uses it. Default: the objects' own kind, or
	// the kind client-go's scheme registers for their Go type.
	Kind schema.GroupVersionKind
	// List wraps the objects of json and yaml output in a "kind: List"
	// document, as kubectl get does for several objects. Default false:
	// each object is a document of its own (yaml documents separated by
	// "---").
	List bool
	// NoHeaders leaves out the header row of tables. Default false.
	NoHeaders bool
	// NamespaceColumn adds a NAMESPACE column in front of a table, as
	// kubectl get -A does. Default false.
	NamespaceColumn bool
	// ShowKind prefixes the NAME cell of tables with the lower-case kind
	// and group (deployment.apps/web), as kubectl get --show-kind does and
	// does by itself when several types are printed. Default false.
	ShowKind bool
	// ShowLabels adds a LABELS column to tables. Default false.
	ShowLabels bool
	// LabelColumns adds a column per label key to tables, holding the
	// label's value (kubectl get -L). Default none.
	LabelColumns []string
	// PrinterColumns are the additionalPrinterColumns of the objects' CRD:
	// the table of a kind kubectl has no columns for shows NAME, these
	// and AGE, as kubectl does for custom resources. Default none: NAME
	// and AGE.
	PrinterColumns []PrinterColumn
	// Now is the clock of the AGE column. Default time.Now.
	Now func() time.Time
	// ShowManagedFields keeps metadata.managedFields in what is printed;
	// by default they are removed, as kubectl get does without
	// --show-managed-fields. Default false.
	ShowManagedFields bool
	// Transform, if set, is applied to each object's JSON document
	// before json or yaml output (templates do not see it); the export
	// command strips server-set fields with it. Default nil.
	Transform func(doc *jsondoc.Doc)
}

// New returns the printer of opts.Format. An unknown format returns an
// error wrapping ErrUnknownFormat that lists the known ones.
func New(opts Options) (Printer, error) {
	if opts.Format == "" {
		opts.Format = Table
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if p, err := newTemplatePrinter(opts); p != nil || err != nil {
		return p, err
	}
	switch opts.Format {
	case Table, Wide:
		return &tablePrinter{opts: opts, wide: opts.Format == Wide}, nil
	case JSON:
		return &jsonPrinter{opts: opts}, nil
	case YAML:
		return &yamlPrinter{opts: opts}, nil
	case Name:
		return &namePrinter{opts: opts}, nil
	}
	return nil, fmt.Errorf("%w %q: allowed formats are %s", ErrUnknownFormat, opts.Format, strings.Join(Formats, ", "))
}

// Single returns a sequence of one object, for printing one object.
func Single(obj runtime.Object) iter.Seq2[runtime.Object, error] {
	return func(yield func(runtime.Object, error) bool) { yield(obj, nil) }
}

// kindOf returns the kind of obj: its own if set, else want if set, else
// the kind the scheme registers its Go type under.
func kindOf(obj runtime.Object, want schema.GroupVersionKind) schema.GroupVersionKind {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk
	}
	if want.Kind != "" {
		return want
	}
	if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0]
	}
	return schema.GroupVersionKind{}
}

// Content returns obj as a JSON-compatible map with apiVersion and kind set
// (from kind when obj lacks them), deep-copied so that the caller may
// modify it.
func Content(obj runtime.Object, kind schema.GroupVersionKind) (map[string]interface{}, error) {
	var m map[string]interface{}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		m = runtime.DeepCopyJSON(o.Object)
	default:
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("convert %T to JSON: %w", obj, err)
		}
	}
	if m == nil {
		m = map[string]interface{}{}
	}
	gvk := kindOf(obj, kind)
	if s, _ := m["apiVersion"].(string); s == "" && gvk.Version != "" {
		m["apiVersion"] = gvk.GroupVersion().String()
	}
	if s, _ := m["kind"].(string); s == "" && gvk.Kind != "" {
		m["kind"] = gvk.Kind
	}
	return m, nil
}

// namePrinter writes kind[.group]/name per object, as kubectl -o name.
type namePrinter struct{ opts Options }

// IsAllowed reports whether format is among allowed; a template format
// (jsonpath=..., custom-columns=..., go-template=...) is allowed when
// allowed holds TemplateFormats.
func IsAllowed(format string, allowed []string) bool {
	if IsTemplate(format) {
		return slices.Contains(allowed, TemplateFormats[0])
	}
	return slices.Contains(allowed, format)
}
