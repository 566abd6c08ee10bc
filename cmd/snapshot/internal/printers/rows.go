package printers

import (
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Row is what a RowPrinter prints of one object, rendered apart from the
// other objects: the cells of a table row, or the line of -o name. It
// holds them in one string (each cell after its length), never the
// object: a pod's row in a table of all namespaces weighs about 70 bytes.
type Row struct {
	packed string
}

// packRow packs cells into a Row.
func packRow(cells []string) Row {
	n := 0
	for _, c := range cells {
		n += uvarintLen(len(c)) + len(c)
	}
	var b strings.Builder
	b.Grow(n)
	var buf [binary.MaxVarintLen64]byte
	for _, c := range cells {
		b.Write(buf[:binary.PutUvarint(buf[:], uint64(len(c)))])
		b.WriteString(c)
	}
	return Row{packed: b.String()}
}

// cells returns the cells of r, substrings of its string.
func (r Row) cells() []string {
	var out []string
	for s := r.packed; s != ""; {
		n, k := 0, 0
		for shift := 0; ; shift += 7 {
			c := s[k]
			k++
			n |= int(c&0x7f) << shift
			if c < 0x80 {
				break
			}
		}
		out = append(out, s[k:k+n])
		s = s[k+n:]
	}
	return out
}

func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// RowPrinter is a Printer whose output is one row per object, each row
// depending on its object alone (table, wide, custom-columns, name), so
// that rows can be rendered in one order and printed in another: list
// --sort-by renders each object's row as it reads the object, sorts the
// rows, then prints them, without reading the objects twice.
//
// Print(w, objs) writes what PrintRows(w, rows) writes for the rows Row
// renders of objs, in the same order. Row and PrintRows share the
// printer's state (a table's columns come from the first object Row
// renders, its AGE from the time of the first Row): render every row,
// then print them, with one printer. Print starts afresh. A RowPrinter is
// used by one goroutine at a time.
type RowPrinter interface {
	Printer
	// Row renders the row of obj. It does not modify or hold obj.
	Row(obj runtime.Object) (Row, error)
	// PrintRows writes the rows rows yields, in order, to w as one
	// document, with a header where the format has one. It stops at the
	// first error rows yields or writing returns, and returns it.
	PrintRows(w io.Writer, rows iter.Seq2[Row, error]) error
}

// rowsOf returns the rows render renders of the objects objs yields.
func rowsOf(objs iter.Seq2[runtime.Object, error], render func(runtime.Object) (Row, error)) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		for obj, err := range objs {
			var r Row
			if err == nil {
				r, err = render(obj)
			}
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

// Print writes the table of objs (see RowPrinter).
func (p *tablePrinter) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	p.cols = nil
	return p.PrintRows(w, rowsOf(objs, p.Row))
}

// Row renders obj's table row: its kind's columns, decorated with the
// kind, namespace and label columns the options ask for.
func (p *tablePrinter) Row(obj runtime.Object) (Row, error) {
	if p.cols == nil {
		p.cols = columnsFor(obj, p.opts)
		p.now = p.opts.Now()
		p.nameFirst = p.cols.header(false)[0] == "NAME"
	}
	row, err := p.cols.row(obj, p.wide, p.now)
	if err != nil {
		return Row{}, err
	}
	if row, err = p.decorate(obj, row); err != nil {
		return Row{}, err
	}
	if p.opts.NamespaceColumn {
		a, err := meta.Accessor(obj)
		if err != nil {
			return Row{}, fmt.Errorf("namespace of %T: %w", obj, err)
		}
		row = p.withNamespace(a.GetNamespace(), row)
	}
	return packRow(oneLine(row)), nil
}

// PrintRows writes the rows as a table, headed by the columns of the
// first object Row rendered; no rows, no table.
func (p *tablePrinter) PrintRows(w io.Writer, rows iter.Seq2[Row, error]) error {
	t := &tableWriter{w: w}
	return t.addRows(rows, func() {
		if !p.opts.NoHeaders && p.cols != nil {
			t.add(p.withNamespace("NAMESPACE", p.decorateHeader(p.cols.header(p.wide))))
		}
	})
}

// Print writes the custom columns of objs (see RowPrinter).
func (p *customColumnsPrinter) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	return p.PrintRows(w, rowsOf(objs, p.Row))
}

// Row renders obj's cells: what each column's path finds in its content.
func (p *customColumnsPrinter) Row(obj runtime.Object) (Row, error) {
	m, err := content(obj, &p.opts)
	if err != nil {
		return Row{}, err
	}
	row := make([]string, len(p.cols))
	for i, c := range p.cols {
		if row[i], err = FieldString(c.path, m); err != nil {
			return Row{}, err
		}
	}
	return packRow(oneLine(row)), nil
}

// PrintRows writes the header (unless NoHeaders), even without rows, then
// the rows.
func (p *customColumnsPrinter) PrintRows(w io.Writer, rows iter.Seq2[Row, error]) error {
	t := &tableWriter{w: w}
	if !p.opts.NoHeaders {
		h := make([]string, len(p.cols))
		for i, c := range p.cols {
			h[i] = c.header
		}
		t.add(h)
	}
	return t.addRows(rows, nil)
}

// Print writes kind[.group]/name per object (see RowPrinter).
func (p *namePrinter) Print(w io.Writer, objs iter.Seq2[runtime.Object, error]) error {
	return p.PrintRows(w, rowsOf(objs, p.Row))
}

// Row renders obj's kind[.group]/name.
func (p *namePrinter) Row(obj runtime.Object) (Row, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return Row{}, fmt.Errorf("name of %T: %w", obj, err)
	}
	gvk := kindOf(obj, p.opts.Kind)
	prefix := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		prefix += "." + gvk.Group
	}
	return packRow([]string{prefix + "/" + a.GetName()}), nil
}

// PrintRows writes one row a line.
func (p *namePrinter) PrintRows(w io.Writer, rows iter.Seq2[Row, error]) error {
	for r, err := range rows {
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, r.cells()[0]+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// oneLine cuts each cell of several lines to its first line and "...", as
// kubectl's tables show them.
func oneLine(row []string) []string {
	for i, c := range row {
		if j := strings.IndexAny(c, "\r\n"); j >= 0 {
			row[i] = c[:j] + "..."
		}
	}
	return row
}

var (
	_ RowPrinter = (*tablePrinter)(nil)
	_ RowPrinter = (*customColumnsPrinter)(nil)
	_ RowPrinter = (*namePrinter)(nil)
)
