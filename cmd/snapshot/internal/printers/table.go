package printers

import (
	"fmt"
	"io"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// columns renders the table of one kind.
type columns interface {
	header(wide bool) []string
	row(obj runtime.Object, wide bool, now time.Time) ([]string, error)
}

// tablePrinter writes kubectl's human-readable table.
type tablePrinter struct {
	opts Options
	wide bool
	tableState
}

// tableState is what a tablePrinter's rows share: set by the first Row.
type tableState struct {
	// cols are the columns of the first object's kind; nil before it.
	cols columns
	// now is the clock reading of the AGE cells.
	now time.Time
	// nameFirst is set when the first column is NAME (not for events).
	nameFirst bool
}

// columnsFor returns the columns of a kind: kubectl's for the built-in
// kinds it knows, opts.Columns (a CRD's printer columns) for others, else
// NAME and AGE.
func columnsFor(obj runtime.Object, opts Options) columns {
	return columnsForKind(kindOf(obj, opts.Kind), opts.PrinterColumns)
}

// columnsForKind is columnsFor for objects of kind gvk.
func columnsForKind(gvk schema.GroupVersionKind, printerColumns []PrinterColumn) columns {
	if gvk.Group == "" && gvk.Kind == "Pod" {
		return podColumns{}
	}
	if c, ok := builtinColumns[gvk.GroupKind()]; ok {
		return c
	}
	if len(printerColumns) > 0 {
		if c, err := newCRDColumns(printerColumns); err == nil {
			return c
		}
	}
	return genericColumns{}
}

// decorateHeader adds the -L and --show-labels columns to a header.
func (p *tablePrinter) decorateHeader(h []string) []string {
	for _, l := range p.opts.LabelColumns {
		h = append(h, strings.ToUpper(l))
	}
	if p.opts.ShowLabels {
		h = append(h, "LABELS")
	}
	return h
}

// decorate adds the kind to the name cell (--show-kind) and the -L and
// --show-labels columns to a row.
func (p *tablePrinter) decorate(obj runtime.Object, row []string) ([]string, error) {
	if p.opts.ShowKind && p.nameFirst && len(row) > 0 {
		gvk := kindOf(obj, p.opts.Kind)
		row[0] = strings.ToLower(gvk.GroupKind().String()) + "/" + row[0]
	}
	if len(p.opts.LabelColumns) == 0 && !p.opts.ShowLabels {
		return row, nil
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("labels of %T: %w", obj, err)
	}
	ls := a.GetLabels()
	for _, l := range p.opts.LabelColumns {
		row = append(row, ls[l])
	}
	if p.opts.ShowLabels {
		row = append(row, labels.FormatLabels(ls))
	}
	return row, nil
}

func (p *tablePrinter) withNamespace(ns string, row []string) []string {
	if !p.opts.NamespaceColumn {
		return row
	}
	return append([]string{ns}, row...)
}

// tableWriter aligns columns as kubectl's tabwriter does (minimum width 6,
// padding 3, the last column unpadded), holding rows until flush. Widths
// computed at a flush are kept as minimums for the next block.
type tableWriter struct {
	w      io.Writer
	rows   [][]string
	widths []int
}

// add holds row. A cell of several lines shows its first line and "...",
// as kubectl's tables do.
func (t *tableWriter) add(row []string) {
	t.rows = append(t.rows, oneLine(row))
}

// addRows adds rows, flushing every FlushRows rows and at the end; first,
// if not nil, is called before the first row (to add a header only when
// there are rows).
func (t *tableWriter) addRows(rows iter.Seq2[Row, error], first func()) error {
	for r, err := range rows {
		if err != nil {
			return err
		}
		if first != nil {
			first()
			first = nil
		}
		t.add(r.cells())
		if len(t.rows) >= FlushRows {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	return t.flush()
}

func (t *tableWriter) flush() error {
	for _, row := range t.rows {
		for i, cell := range row {
			if i == len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], 6, utf8.RuneCountInString(cell)+3)
		}
	}
	var b strings.Builder
	for _, row := range t.rows {
		b.Reset()
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(cell)))
			}
		}
		b.WriteByte('\n')
		if _, err := io.WriteString(t.w, b.String()); err != nil {
			return err
		}
	}
	t.rows = t.rows[:0]
	return nil
}

// age is kubectl's AGE cell.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// genericColumns is NAME AGE.
type genericColumns struct{}

func (genericColumns) header(bool) []string { return []string{"NAME", "AGE"} }

func (genericColumns) row(obj runtime.Object, _ bool, now time.Time) ([]string, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("table row of %T: %w", obj, err)
	}
	return []string{a.GetName(), age(a.GetCreationTimestamp(), now)}, nil
}

// podColumns is kubectl's pod table.
type podColumns struct{}

func (podColumns) header(wide bool) []string {
	h := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if wide {
		h = append(h, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
	}
	return h
}

func (podColumns) row(obj runtime.Object, wide bool, now time.Time) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		u, isU := obj.(*unstructured.Unstructured)
		if !isU {
			return nil, fmt.Errorf("pod table row: unexpected type %T", obj)
		}
		pod = &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod); err != nil {
			return nil, fmt.Errorf("pod table row of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
	}
	return podRow(pod, wide, now), nil
}
