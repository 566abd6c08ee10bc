package printers

// The column sets of kubectl's table for built-in kinds follow kubectl's
// printers (k8s.io/kubernetes pkg/printers/internalversion, Apache License
// 2.0), on the v1 types; one file per API group.

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindColumns is the table of one built-in kind: its header, the columns
// -o wide adds, and a row function on the typed object.
type kindColumns[T any] struct {
	headers, wide []string
	// wideHeader, when set, is the whole header of -o wide.
	wideHeader []string
	cells      func(obj *T, wide bool, now time.Time) []string
}

func (k kindColumns[T]) header(wide bool) []string {
	if wide && k.wideHeader != nil {
		return k.wideHeader
	}
	if wide {
		return append(append([]string(nil), k.headers...), k.wide...)
	}
	return k.headers
}

func (k kindColumns[T]) row(obj runtime.Object, wide bool, now time.Time) ([]string, error) {
	t, err := typed[T](obj)
	if err != nil {
		return nil, err
	}
	return k.cells(t, wide, now), nil
}

// typed returns obj as a *T: itself, or converted from unstructured
// content.
func typed[T any](obj runtime.Object) (*T, error) {
	if t, ok := any(obj).(*T); ok {
		return t, nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("table row: unexpected type %T, want %T", obj, new(T))
	}
	t := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
		return nil, fmt.Errorf("table row of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return t, nil
}

// builtinColumns are the tables of built-in kinds by group and kind; the
// pod table is podColumns.
var builtinColumns = map[schema.GroupKind]columns{}

func register(group, kind string, c columns) {
	builtinColumns[schema.GroupKind{Group: group, Kind: kind}] = c
}

// count is an integer cell.
func count[N ~int | ~int32 | ~int64](n N) string { return fmt.Sprint(int64(n)) }
