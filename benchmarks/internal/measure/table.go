package measure

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Table is a side-by-side comparison: one row per metric, one column per
// implementation, then the ratio of every other implementation to the
// baseline (the first column), then the target of each ratio and whether it
// was met. It is not safe for concurrent use.
type Table struct {
	// Title is printed above the table.
	Title string
	// Columns names the implementations; Columns[0] is the baseline.
	Columns []string
	rows    []Row
	notes   []string
}

// SetColumns names t's columns after results, one each (name gives a
// result's implementation; the first is the baseline), and returns the
// index of the column named target, or -1 when only the baseline is.
func SetColumns[R any](t *Table, results []R, name func(R) string, target string) int {
	col := -1
	t.Columns = t.Columns[:0]
	for i, r := range results {
		t.Columns = append(t.Columns, name(r))
		if name(r) == target && i > 0 {
			col = i
		}
	}
	return col
}

// Values returns f of each result: a row's values, one per column.
func Values[R any](results []R, f func(R) float64) []float64 {
	out := make([]float64, len(results))
	for i, r := range results {
		out[i] = f(r)
	}
	return out
}

// Row is one metric of a Table.
type Row struct {
	// Metric names the metric and its unit, for example "heap bytes/obj".
	Metric string
	// Values holds one value per column; NaN prints as "-".
	Values []float64
	// Target, when set, is checked against the ratio of column TargetColumn
	// to the baseline.
	Target *Target
}

// Target is a goal for one column of a row: for its value itself, or for
// its ratio to the baseline.
type Target struct {
	// Column is the index in Table.Columns of the implementation the
	// target is about; never 0 (the baseline) for a ratio target.
	Column int
	// AtMost is true when the value must be at most Value, false when it
	// must be at least Value.
	AtMost bool
	// Value is the bound.
	Value float64
	// Ratio is true when Value bounds the ratio to the baseline, false
	// when it bounds the column's value.
	Ratio bool
}

// Met reports whether v (the column's ratio or value, as the target says)
// meets the target. NaN never does.
func (t Target) Met(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	if t.AtMost {
		return v <= t.Value
	}
	return v >= t.Value
}

// describe returns the target as text, for example "bolt <= 0.05x client-go".
func (t Target) describe(columns []string) string {
	op := ">="
	if t.AtMost {
		op = "<="
	}
	name := "?"
	if t.Column >= 0 && t.Column < len(columns) {
		name = columns[t.Column]
	}
	if t.Ratio {
		return fmt.Sprintf("%s %s %sx %s", name, op, formatRatio(t.Value), columns[0])
	}
	return fmt.Sprintf("%s %s %s", name, op, formatValue(t.Value))
}

// Add appends a row. values must have one value per column.
func (t *Table) Add(metric string, target *Target, values ...float64) {
	t.rows = append(t.rows, Row{Metric: metric, Values: values, Target: target})
}

// Note appends a line printed under the table.
func (t *Table) Note(format string, args ...interface{}) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Rows returns the rows added so far.
func (t *Table) Rows() []Row { return t.rows }

// Ratio returns value/baseline, NaN when either is NaN or the baseline is 0.
func Ratio(value, baseline float64) float64 {
	if math.IsNaN(value) || math.IsNaN(baseline) || baseline == 0 {
		return math.NaN()
	}
	return value / baseline
}

// Write prints the table to w.
func (t *Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Title)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	header := []string{"metric"}
	header = append(header, t.Columns...)
	for _, c := range t.Columns[1:] {
		header = append(header, c+"/"+t.Columns[0])
	}
	header = append(header, "target", "met")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range t.rows {
		cells := []string{r.Metric}
		for i := range t.Columns {
			v := math.NaN()
			if i < len(r.Values) {
				v = r.Values[i]
			}
			cells = append(cells, formatValue(v))
		}
		for i := 1; i < len(t.Columns); i++ {
			cells = append(cells, formatRatio(r.ratio(i)))
		}
		target, met := "", ""
		if r.Target != nil {
			target = r.Target.describe(t.Columns)
			met = "no"
			if r.Met() {
				met = "yes"
			}
		}
		cells = append(cells, target, met)
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range t.notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// Met reports whether the row has a target and meets it.
func (r Row) Met() bool {
	if r.Target == nil {
		return false
	}
	v := math.NaN()
	switch {
	case r.Target.Ratio:
		v = r.ratio(r.Target.Column)
	case r.Target.Column >= 0 && r.Target.Column < len(r.Values):
		v = r.Values[r.Target.Column]
	}
	return r.Target.Met(v)
}

// ratio returns the row's value in column i over its baseline.
func (r Row) ratio(i int) float64 {
	if i >= len(r.Values) || len(r.Values) == 0 {
		return math.NaN()
	}
	return Ratio(r.Values[i], r.Values[0])
}

// formatValue prints v with three significant digits at least and no
// exponent, "-" for NaN.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) >= 100:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func formatRatio(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("%.2g", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// groupThousands inserts a comma every three digits of an integer string.
func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
