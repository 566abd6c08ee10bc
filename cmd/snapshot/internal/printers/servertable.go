package printers

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TableColumn is a column of a server-side table (metav1.Table): its
// header, and its priority: 0 for the columns kubectl get shows, 1 for
// those only -o wide adds.
type TableColumn struct {
	Name     string
	Priority int32
}

// ServerTable is the table of one kind as an API server serves it (kubectl asks
// for it with as=Table): the columns of -o wide, each with its priority,
// and rows of all their cells. kubectl shows the columns of priority 0,
// and every column with -o wide; it adds NAMESPACE, LABELS and label
// columns itself.
type ServerTable struct {
	cols    columns
	Columns []TableColumn
}

// NewServerTable returns the table of objects of kind gvk: kubectl's columns for
// the built-in kinds the CLI knows, printerColumns (a CRD's
// additionalPrinterColumns) for others, else NAME and AGE.
func NewServerTable(gvk schema.GroupVersionKind, printerColumns []PrinterColumn) *ServerTable {
	c := columnsForKind(gvk, printerColumns)
	t := &ServerTable{cols: c}
	narrow := c.header(false)
	for _, h := range c.header(true) {
		p := int32(1)
		if slices.Contains(narrow, h) {
			p = 0
		}
		t.Columns = append(t.Columns, TableColumn{Name: h, Priority: p})
	}
	return t
}

// Row returns the cells of obj, one per column, at time now (AGE).
func (t *ServerTable) Row(obj runtime.Object, now time.Time) ([]string, error) {
	return t.cols.row(obj, true, now)
}
