package printers

import (
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// The List document kubectl get prints around several objects; items are
// streamed between its head and tail. Keys are in the order kubectl prints
// them (sorted).
const (
	jsonListHead      = "{\n    \"apiVersion\": \"v1\",\n    \"items\": ["
	jsonListTail      = "],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n"
	jsonItemIndent    = "        "
	yamlListHead      = "apiVersion: v1\nitems:"
	yamlListTail      = "kind: List\nmetadata:\n  resourceVersion: \"\"\n"
	yamlDocumentBreak = "---\n"
)

// content returns the map to print for obj, transformed.
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
	if opts.Transform != nil {
		opts.Transform(m)
	}
	return m, nil
}

// marshalJSON indents like kubectl (four spaces) without HTML escaping.
func marshalJSON(v interface{}, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "    ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonPrinter writes JSON, one object or a List.
type jsonPrinter struct{ opts Options }

func (p *jsonPrinter) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	n := 0
	if p.opts.List {
		if _, err := io.WriteString(w, jsonListHead); err != nil {
			return err
		}
	}
	// One buffer and encoder for every object: the encoder reuses its
	// indentation buffer, so an object costs its encoding, not copies.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if p.opts.List {
		enc.SetIndent(jsonItemIndent, "    ")
	} else {
		enc.SetIndent("", "    ")
	}
	for obj, err := range objs {
		if err != nil {
			return err
		}
		m, err := content(obj, &p.opts)
		if err != nil {
			return err
		}
		buf.Reset()
		if p.opts.List {
			if n > 0 {
				buf.WriteString(",")
			}
			buf.WriteString("\n" + jsonItemIndent)
		}
		if err := enc.Encode(m); err != nil {
			return err
		}
		out := buf.Bytes()
		if p.opts.List {
			out = bytes.TrimSuffix(out, []byte("\n"))
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		n++
	}
	if !p.opts.List {
		return nil
	}
	tail := jsonListTail
	if n > 0 {
		tail = "\n    " + tail
	}
	_, err := io.WriteString(w, tail)
	return err
}

// yamlPrinter writes YAML, one object per document or a List.
type yamlPrinter struct{ opts Options }

func (p *yamlPrinter) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	n := 0
	if p.opts.List {
		if _, err := io.WriteString(w, yamlListHead); err != nil {
			return err
		}
	}
	for obj, err := range objs {
		if err != nil {
			return err
		}
		m, err := content(obj, &p.opts)
		if err != nil {
			return err
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return err
		}
		switch {
		case p.opts.List:
			if n == 0 {
				b = append([]byte("\n"), listItem(b)...)
			} else {
				b = listItem(b)
			}
		case n > 0:
			b = append([]byte(yamlDocumentBreak), b...)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		n++
	}
	if !p.opts.List {
		return nil
	}
	tail := yamlListTail
	if n == 0 {
		tail = " []\n" + tail
	}
	_, err := io.WriteString(w, tail)
	return err
}

// listItem turns a YAML document into an item of a block sequence: "- "
// before the first line and two spaces before the others. Lines inside
// block scalars move with their parent, which keeps them valid; empty lines
// stay empty.
func listItem(doc []byte) []byte {
	lines := strings.SplitAfter(string(doc), "\n")
	var b strings.Builder
	b.Grow(len(doc) + 2*len(lines))
	for i, l := range lines {
		switch {
		case l == "":
		case i == 0:
			b.WriteString("- ")
			b.WriteString(l)
		case l == "\n":
			b.WriteString(l)
		default:
			b.WriteString("  ")
			b.WriteString(l)
		}
	}
	return []byte(b.String())
}
