package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// printOptions are the output flags get and list share with kubectl get.
type printOptions struct {
	Output            string
	NoHeaders         bool
	ShowLabels        bool
	LabelColumns      []string
	ShowKind          bool
	ShowManagedFields bool
	SortBy            string
}

// addFlags adds -o (default def), --no-headers, --show-labels, -L,
// --show-kind, --show-managed-fields and, for list, --sort-by.
func (p *printOptions) addFlags(cmd *cobra.Command, def string) {
	fl := cmd.Flags()
	fl.StringVarP(&p.Output, "output", "o", def, outputHelp(printers.AllFormats))
	fl.BoolVar(&p.NoHeaders, "no-headers", false, "leave out the header row of tables and custom columns")
	fl.BoolVar(&p.ShowLabels, "show-labels", false, "add a LABELS column to tables")
	fl.StringSliceVarP(&p.LabelColumns, "label-columns", "L", nil, "add a column per label key to tables, e.g. -L app,tier")
	fl.BoolVar(&p.ShowKind, "show-kind", false, "prefix names in tables with their kind (always on for several types)")
	fl.BoolVar(&p.ShowManagedFields, "show-managed-fields", false, "keep metadata.managedFields in the output")
}

// validate checks the output format (and, with sorting, --sort-by).
func (p *printOptions) validate(sorting bool) error {
	if err := checkOutput(p.Output, printers.AllFormats); err != nil {
		return err
	}
	for _, l := range p.LabelColumns {
		if l == "" {
			return usageErrorf("-L/--label-columns: empty label key")
		}
	}
	if sorting && p.SortBy != "" {
		if _, err := newSorter(p.SortBy); err != nil {
			return usageErrorf("--sort-by %q: %v", p.SortBy, err)
		}
	}
	return nil
}

// isTable reports whether the output is a kubectl table (one per type).
func (p *printOptions) isTable() bool {
	return p.Output == printers.Table || p.Output == printers.Wide
}

// printer returns the printer of the options for objects of kind.
func (p *printOptions) printer(env *Env, kind schema.GroupVersionKind, list, namespaceColumn, showKind bool, cols []printers.PrinterColumn) (printers.Printer, error) {
	pr, err := printers.New(printers.Options{
		Format:            p.Output,
		Kind:              kind,
		List:              list,
		NoHeaders:         p.NoHeaders,
		NamespaceColumn:   namespaceColumn,
		ShowKind:          p.ShowKind || showKind,
		ShowLabels:        p.ShowLabels,
		LabelColumns:      p.LabelColumns,
		ShowManagedFields: p.ShowManagedFields,
		PrinterColumns:    cols,
		Now:               env.Now,
	})
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return pr, nil
}

// targetKind is the kind of a target's objects.
func targetKind(t *target) schema.GroupVersionKind { return kindOf(t.info.Identity) }

// withKind returns obj as an unstructured object with its apiVersion and
// kind set from info, for output that mixes resources.
func withKind(obj runtime.Object, info inspect.ResourceInfo) (runtime.Object, error) {
	m, err := printers.Content(obj, kindOf(info.Identity))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(info), err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// getOne returns the object name of a resource in namespace ns (ignored
// for cluster-scoped objects), or an error matching ErrNotFound. With
// namesOnly it does not decode the object: it returns its name and
// namespace, read from its key (for -o name of a sealed resource, whose
// names are stored in clear).
func (f *snapshotFile) getOne(st *bolt.Store, info inspect.ResourceInfo, ns, name string, namesOnly bool) (runtime.Object, error) {
	// A namespaced object's key is namespace/name, a cluster-scoped
	// one's the name alone.
	for _, key := range []string{ns + "/" + name, name} {
		if namesOnly {
			_, exists, err := st.ResourceVersionOf(key)
			if err != nil {
				return nil, fmt.Errorf("read %s %q: %w", displayName(info), key, err)
			}
			if exists {
				return keyObject(key), nil
			}
			continue
		}
		obj, exists, err := st.GetByKey(key)
		if isKeyError(err) {
			k, _ := f.keys(context.Background(), info)
			return nil, withHint(&marked{err: fmt.Errorf("%s", k.describe(fmt.Sprintf("%s %q", displayName(info), key))), sentinel: ErrKey}, keysHint)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s %q: %w", displayName(info), key, err)
		}
		if !exists {
			continue
		}
		ro, ok := obj.(runtime.Object)
		if !ok {
			return nil, fmt.Errorf("%s %q is a %T, not a runtime.Object", displayName(info), name, obj)
		}
		return ro, nil
	}
	return nil, &objectNotFound{resource: displayName(info), name: name}
}

// keyObject is an object known by its key alone (namespace/name or name):
// what -o name needs of an object it does not decode.
func keyObject(key string) runtime.Object {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// objectNotFound is an object get was asked for and the file does not
// hold. printError prints it as kubectl prints a NotFound from the API
// server.
type objectNotFound struct {
	resource, name string
}

func (e *objectNotFound) Error() string { return fmt.Sprintf("%s %q not found", e.resource, e.name) }

// Is makes it match ErrNotFound (exit code 3).
func (e *objectNotFound) Is(target error) bool { return target == ErrNotFound }
