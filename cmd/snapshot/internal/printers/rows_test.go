package printers

import (
	"bytes"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestRowsPrintInAnyOrder checks that rows rendered in one order and
// printed in another are the output of Print on the objects in that other
// order, for every printer of rows: a table's header, widths and AGE come
// from the rendered rows, not from the order they were rendered in.
func TestRowsPrintInAnyOrder(t *testing.T) {
	objs := pods()
	for _, opts := range []Options{
		{Format: Table, Kind: podKind},
		{Format: Wide, Kind: podKind, NamespaceColumn: true, ShowLabels: true, LabelColumns: []string{"app"}},
		{Format: Table, Kind: podKind, ShowKind: true, NoHeaders: true},
		{Format: Name, Kind: podKind},
		{Format: "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,IMAGES:.spec.containers[*].image", Kind: podKind},
		{Format: "custom-columns=NAME:.metadata.name", Kind: podKind, NoHeaders: true},
	} {
		t.Run(opts.Format, func(t *testing.T) {
			opts.Now = fixedNow
			reversed := slices.Clone(objs)
			slices.Reverse(reversed)
			want := print(t, opts, reversed)
			p, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			rp := p.(RowPrinter)
			var rows []Row
			for _, obj := range objs {
				r, err := rp.Row(obj)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, r)
			}
			slices.Reverse(rows)
			var b bytes.Buffer
			if err := rp.PrintRows(&b, func(yield func(Row, error) bool) {
				for _, r := range rows {
					if !yield(r, nil) {
						return
					}
				}
			}); err != nil {
				t.Fatal(err)
			}
			if b.String() != want {
				t.Errorf("PrintRows:\n%s\nPrint:\n%s", b.String(), want)
			}
		})
	}
}

// TestEmptyRows checks that printing no rows is printing no objects: no
// table, but the header of custom columns.
func TestEmptyRows(t *testing.T) {
	for _, format := range []string{Table, Name, "custom-columns=NAME:.metadata.name"} {
		p, err := New(Options{Format: format, Kind: podKind})
		if err != nil {
			t.Fatal(err)
		}
		var printed, rows bytes.Buffer
		if err := p.Print(&printed, seq(nil)); err != nil {
			t.Fatal(err)
		}
		if err := p.(RowPrinter).PrintRows(&rows, func(func(Row, error) bool) {}); err != nil {
			t.Fatal(err)
		}
		if printed.String() != rows.String() {
			t.Errorf("%s: PrintRows of no rows %q, Print of no objects %q", format, rows.String(), printed.String())
		}
	}
}

// TestRowsStopAtError checks that PrintRows returns the error its rows
// yield.
func TestRowsStopAtError(t *testing.T) {
	boom := errors.New("boom")
	p, err := New(Options{Format: Table, Kind: podKind})
	if err != nil {
		t.Fatal(err)
	}
	rp := p.(RowPrinter)
	var rows iter.Seq2[Row, error] = rowsOf(func(yield func(runtime.Object, error) bool) {
		_ = yield(pods()[0], nil) && yield(nil, boom)
	}, rp.Row)
	if err := rp.PrintRows(&bytes.Buffer{}, rows); !errors.Is(err, boom) {
		t.Errorf("PrintRows: %v, want %v", err, boom)
	}
}

func TestRowPacksCells(t *testing.T) {
	for _, cells := range [][]string{
		{"web-0"},
		{"", "a", ""},
		{strings.Repeat("x", 127), strings.Repeat("y", 128), strings.Repeat("z", 70000), "é"},
	} {
		if got := packRow(cells).cells(); !slices.Equal(got, cells) {
			t.Errorf("packRow(%q).cells() = %q", cells, got)
		}
	}
}
