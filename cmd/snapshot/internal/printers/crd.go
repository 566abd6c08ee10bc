package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
)

// PrinterColumn is one additionalPrinterColumns entry of a CRD version.
type PrinterColumn struct {
	// Name is the column's header (upper-cased when printed).
	Name string
	// Type is the OpenAPI type: integer, number, string, boolean or date
	// (printed as an age).
	Type string
	// JSONPath is the field, as a simple JSONPath (.spec.size).
	JSONPath string
	// Priority above 0 shows the column only with -o wide.
	Priority int32
}

// crdColumns is the table kubectl prints for a custom resource: NAME, the
// CRD's printer columns, and AGE when the CRD has no date column of its
// own named Age.
type crdColumns struct {
	cols  []PrinterColumn
	paths []*jsonpath.JSONPath
	age   bool
}

func newCRDColumns(cols []PrinterColumn) (*crdColumns, error) {
	c := &crdColumns{cols: cols, age: true}
	for i, col := range cols {
		expr, err := RelaxedJSONPath(col.JSONPath)
		if err != nil {
			return nil, err
		}
		jp := jsonpath.New(fmt.Sprintf("column%d", i)).AllowMissingKeys(true)
		if err := jp.Parse(expr); err != nil {
			return nil, fmt.Errorf("printer column %q: %w", col.Name, err)
		}
		c.paths = append(c.paths, jp)
		if strings.EqualFold(col.Name, "age") {
			c.age = false
		}
	}
	return c, nil
}

func (c *crdColumns) header(wide bool) []string {
	h := []string{"NAME"}
	for _, col := range c.cols {
		if col.Priority == 0 || wide {
			h = append(h, strings.ToUpper(col.Name))
		}
	}
	if c.age {
		h = append(h, "AGE")
	}
	return h
}

func (c *crdColumns) row(obj runtime.Object, wide bool, now time.Time) ([]string, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("table row of %T: %w", obj, err)
	}
	m, err := Content(obj, schema.GroupVersionKind{})
	if err != nil {
		return nil, err
	}
	row := []string{a.GetName()}
	for i, col := range c.cols {
		if col.Priority != 0 && !wide {
			continue
		}
		row = append(row, crdCell(c.paths[i], col, m, now))
	}
	if c.age {
		row = append(row, age(a.GetCreationTimestamp(), now))
	}
	return row, nil
}

// crdCell is one printer column's cell: the first value found, a date as
// an age, "<none>" when there is none (as kubectl's table convertor).
func crdCell(jp *jsonpath.JSONPath, col PrinterColumn, m map[string]interface{}, now time.Time) string {
	results, err := jp.FindResults(m)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return "<none>"
	}
	v := results[0][0].Interface()
	if col.Type == "date" {
		if s, ok := v.(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return age(metav1.NewTime(t), now)
			}
		}
	}
	switch x := v.(type) {
	case nil:
		return "<none>"
	case string:
		return x
	case []interface{}, map[string]interface{}:
		b, err := marshalJSON(x, "")
		if err != nil {
			return fmt.Sprint(x)
		}
		return strings.ReplaceAll(string(b), "\n", "")
	}
	return fmt.Sprint(v)
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
