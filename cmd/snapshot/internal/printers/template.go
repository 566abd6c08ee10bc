package printers

// The template formats follow k8s.io/cli-runtime's printers (jsonpath.go,
// customcolumn.go, template.go; Apache License 2.0). cli-runtime itself is
// not imported: its module requires kustomize and the OpenAPI stack, while
// the formats need only client-go's jsonpath (already a dependency) and
// text/template.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"iter"
	"regexp"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// The prefixes of the template formats: -o jsonpath=TEMPLATE,
// -o custom-columns=SPEC, -o go-template=TEMPLATE (also template=).
const (
	JSONPathPrefix      = "jsonpath="
	CustomColumnsPrefix = "custom-columns="
	GoTemplatePrefix    = "go-template="
	templatePrefix      = "template="
)

// TemplateFormats lists the template formats as help texts show them.
var TemplateFormats = []string{JSONPathPrefix + "...", CustomColumnsPrefix + "...", GoTemplatePrefix + "..."}

// ErrBadTemplate is returned by New for a template that does not parse.
var ErrBadTemplate = errors.New("bad output template")

// IsTemplate reports whether format is one of the template formats.
func IsTemplate(format string) bool {
	for _, p := range []string{JSONPathPrefix, CustomColumnsPrefix, GoTemplatePrefix, templatePrefix} {
		if strings.HasPrefix(format, p) {
			return true
		}
	}
	return false
}

// newTemplatePrinter returns the printer of a template format, or nil,
// nil when format is not one.
func newTemplatePrinter(opts Options) (Printer, error) {
	f := opts.Format
	switch {
	case strings.HasPrefix(f, JSONPathPrefix):
		return newJSONPathPrinter(strings.TrimPrefix(f, JSONPathPrefix), opts)
	case strings.HasPrefix(f, CustomColumnsPrefix):
		return newCustomColumnsPrinter(strings.TrimPrefix(f, CustomColumnsPrefix), opts)
	case strings.HasPrefix(f, GoTemplatePrefix):
		return newGoTemplatePrinter(strings.TrimPrefix(f, GoTemplatePrefix), opts)
	case strings.HasPrefix(f, templatePrefix):
		return newGoTemplatePrinter(strings.TrimPrefix(f, templatePrefix), opts)
	}
	return nil, nil
}

// listContent is what a template sees for several objects: kubectl's List,
// its items the objects' content. It holds every object: templates address
// the whole list (.items[*]), which no stream can answer.
func listContent(objs iter.Seq2[runtime.Object, error], opts *Options) (map[string]interface{}, error) {
	items := []interface{}{}
	for obj, err := range objs {
		if err != nil {
			return nil, err
		}
		m, err := content(obj, opts)
		if err != nil {
			return nil, err
		}
		items = append(items, m)
	}
	return map[string]interface{}{"apiVersion": "v1", "kind": "List", "metadata": map[string]interface{}{"resourceVersion": ""}, "items": items}, nil
}

// templateInput returns the content of the one object objs yields when opts.List
// is false, else the List of all of them.
func templateInput(objs iter.Seq2[runtime.Object, error], opts *Options) (interface{}, error) {
	if opts.List {
		return listContent(objs, opts)
	}
	var out map[string]interface{}
	for obj, err := range objs {
		if err != nil {
			return nil, err
		}
		if out, err = content(obj, opts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// templateOutput is -o jsonpath=TEMPLATE or -o go-template=TEMPLATE: the
// template executed on templateInput.
type templateOutput struct {
	kind    string // "jsonpath" or "go-template", as errors name it
	raw     string
	execute func(w io.Writer, in interface{}) error
	// buffered executes into a buffer, so that a failing template prints
	// nothing.
	buffered bool
	opts     Options
}

// newJSONPathPrinter is -o jsonpath=TEMPLATE: missing keys print nothing,
// as in kubectl get.
func newJSONPathPrinter(tmpl string, opts Options) (Printer, error) {
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return nil, badTemplate("jsonpath", tmpl, err)
	}
	return &templateOutput{kind: "jsonpath", raw: tmpl, execute: jp.Execute, opts: opts}, nil
}

// newGoTemplatePrinter is -o go-template=TEMPLATE, with kubectl's functions
// exists and base64decode.
func newGoTemplatePrinter(tmpl string, opts Options) (Printer, error) {
	t, err := template.New("output").Funcs(template.FuncMap{
		"exists":       exists,
		"base64decode": base64decode,
	}).Parse(tmpl)
	if err != nil {
		return nil, badTemplate("go-template", tmpl, err)
	}
	return &templateOutput{kind: "go-template", raw: tmpl, execute: t.Execute, buffered: true, opts: opts}, nil
}

func badTemplate(kind, tmpl string, err error) error {
	return fmt.Errorf("%w: %s %q: %w", ErrBadTemplate, kind, tmpl, err)
}

func (p *templateOutput) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	in, err := templateInput(objs, &p.opts)
	if err != nil || in == nil {
		return err
	}
	out := w
	var b bytes.Buffer
	if p.buffered {
		out = &b
	}
	if err := p.execute(out, in); err != nil {
		return fmt.Errorf("execute %s %q: %w", p.kind, p.raw, err)
	}
	if p.buffered {
		_, err = w.Write(b.Bytes())
	}
	return err
}

// exists is kubectl's template function: whether the path of keys and
// indexes exists in item.
func exists(item interface{}, indices ...interface{}) bool {
	v := item
	for _, ix := range indices {
		switch c := v.(type) {
		case map[string]interface{}:
			k, ok := ix.(string)
			if !ok {
				return false
			}
			if v, ok = c[k]; !ok {
				return false
			}
		case []interface{}:
			i, ok := ix.(int)
			if !ok || i < 0 || i >= len(c) {
				return false
			}
			v = c[i]
		default:
			return false
		}
	}
	return true
}

func base64decode(v string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("base64 decode: %w", err)
	}
	return string(b), nil
}

// relaxedPath accepts name1.name2, .name1.name2, {name1.name2} and
// {.name1.name2} (cli-runtime's RelaxedJSONPathExpression).
var relaxedPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// RelaxedJSONPath turns a field path as --sort-by and custom-columns take
// it into a jsonpath template.
func RelaxedJSONPath(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	m := relaxedPath.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("%w: unexpected path %q, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'", ErrBadTemplate, path)
	}
	if m[1] != "" {
		return "{." + m[1] + "}", nil
	}
	return "{." + m[2] + "}", nil
}

// column is one column of -o custom-columns.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// customColumnsPrinter is -o custom-columns=HEADER:PATH,...: a table
// streamed like the other tables, one row per object.
type customColumnsPrinter struct {
	cols []column
	opts Options
}

func newCustomColumnsPrinter(spec string, opts Options) (Printer, error) {
	if spec == "" {
		return nil, fmt.Errorf("%w: custom-columns format specified but no custom columns given", ErrBadTemplate)
	}
	var cols []column
	for i, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%w: unexpected custom-columns spec %q, expected <header>:<json-path-expr>", ErrBadTemplate, part)
		}
		expr, err := RelaxedJSONPath(path)
		if err != nil {
			return nil, err
		}
		jp := jsonpath.New(fmt.Sprintf("column%d", i)).AllowMissingKeys(true)
		if err := jp.Parse(expr); err != nil {
			return nil, fmt.Errorf("%w: custom column %q: %w", ErrBadTemplate, part, err)
		}
		cols = append(cols, column{header: header, path: jp})
	}
	return &customColumnsPrinter{cols: cols, opts: opts}, nil
}

// FieldString is the text of what path finds in the content m: the
// values joined by commas, "<none>" when there is none.
func FieldString(path *jsonpath.JSONPath, m map[string]interface{}) (string, error) {
	values, err := path.FindResults(m)
	if err != nil {
		return "", fmt.Errorf("custom column: %w", err)
	}
	var out []string
	for _, vs := range values {
		for _, v := range vs {
			out = append(out, fmt.Sprint(v.Interface()))
		}
	}
	if len(out) == 0 {
		return "<none>", nil
	}
	return strings.Join(out, ","), nil
}
