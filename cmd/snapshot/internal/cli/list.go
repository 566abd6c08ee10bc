package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// checkOutput returns a usage error for a format not in allowed.
func checkOutput(format string, allowed []string) error {
	if printers.IsAllowed(format, allowed) {
		if printers.IsTemplate(format) {
			if _, err := printers.New(printers.Options{Format: format}); err != nil {
				return usageErrorf("%v", err)
			}
		}
		return nil
	}
	return usageErrorf("unknown output format %q: allowed formats are %s", format, strings.Join(allowed, ", "))
}

// outputHelp is the help of -o.
func outputHelp(allowed []string) string {
	return "output format: one of " + strings.Join(allowed, ", ")
}

// listOptions is `snapshot list FILE TYPE[,TYPE...]`.
type listOptions struct {
	fileCommand

	Resource string
	Filter   filterOptions
	Print    printOptions
}

func newListCommand(c command) *cobra.Command {
	o := &listOptions{fileCommand: c.file()}
	cmd := &cobra.Command{
		Use:   "list FILE TYPE[,TYPE...]",
		Short: "List the objects of resources, as kubectl get does",
		Long: `List the objects of resources recorded in FILE, as 'kubectl get TYPE' lists them
from a cluster: a table by default with kubectl's columns for the kind (custom resources:
their CRD's additionalPrinterColumns when the file holds the CRD), or json/yaml (a List
document), names, or -o jsonpath=..., custom-columns=..., go-template=....

TYPE is what kubectl accepts where the file allows it: pods, pod, po, deployments.apps,
deploy, deployments.v1.apps, or the ID that 'snapshot info' prints; several are separated
by commas (pods,cm), printed one table after the other.

Without -n or -A, objects of the namespace the resource was recorded for are listed, or
else of the "default" namespace, as in kubectl; -A wins over -n. Objects are streamed from
the file in key order: memory stays flat for any number of objects, except for
-o jsonpath and -o go-template, whose templates address the whole List, and --sort-by.
A sorted table, custom-columns or name list holds each object's printed row, key and
sort value (not the object) and prints the rows once sorted; sorted json or yaml holds
each object's key and sort value and reads the objects again in order.

Objects that cannot be read from a damaged file are skipped: every readable object is
printed, then the keys that could not be read on standard error, and the exit code is 5.`,
		Example: `  # Pods of namespace kube-system
  snapshot list cache.db pods -n kube-system

  # All pods with their IP and node, without the header
  snapshot list cache.db po -A -o wide --no-headers

  # Deployments labelled app=web in all namespaces, as YAML
  snapshot list cache.db deployments.apps -A -l app=web -o yaml

  # Pods and config maps of a namespace
  snapshot list cache.db pods,cm -n web

  # Pod names and nodes, oldest first
  snapshot list cache.db pods -A -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName --sort-by=.metadata.creationTimestamp`,
		Args:              usageArgs(cobra.ExactArgs(2)),
		ValidArgsFunction: completeFileResource(c.env, c.common),
		RunE:              runE(o),
	}
	o.Filter.addFlags(cmd, false)
	o.Print.addFlags(cmd, printers.Table)
	cmd.Flags().StringVar(&o.Print.SortBy, "sort-by", "", "sort by a field, as a JSONPath expression: --sort-by=.metadata.name")
	registerCompletions(cmd, c.env, c.common, printers.AllFormats)
	return cmd
}

func (o *listOptions) Complete(cmd *cobra.Command, args []string) error {
	o.File, o.Resource = args[0], args[1]
	o.Filter.complete(cmd)
	return nil
}

func (o *listOptions) Validate() error {
	if strings.Contains(o.Resource, "/") {
		return withHint(usageErrorf("list takes resource types, not TYPE/NAME (%q)", o.Resource),
			"Print objects by name with 'snapshot get %s %s'.", shellQuote(o.File), shellQuote(o.Resource))
	}
	if err := o.Print.validate(true); err != nil {
		return err
	}
	return o.Filter.validate()
}

func (o *listOptions) Run(ctx context.Context) (err error) {
	if !printers.IsTemplate(o.Print.Output) || strings.HasPrefix(o.Print.Output, printers.CustomColumnsPrefix) {
		// Streamed: -o jsonpath and go-template hold the whole List.
		defer streamingGC()()
	}
	f, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	nsPick := ""
	if o.Filter.namespaceGiven && !o.Filter.AllNamespaces {
		nsPick = o.Filter.Namespace
	}
	targets, err := parseTargets(o.File, f.resources, []string{o.Resource}, nsPick)
	if err != nil {
		return err
	}
	var parts []listPart
	for _, t := range targets {
		if err := o.Filter.checkFields(t.info); err != nil {
			return err
		}
		p := listPart{info: t.info, namesOnly: listsNamesOnly(t.info, o.Print.Output, o.Print.SortBy, &o.Filter)}
		if p.namesOnly {
			p.st, err = f.keyStore(ctx, t.info)
		} else {
			p.st, err = f.store(ctx, t.info, true)
		}
		if err != nil {
			return err
		}
		parts = append(parts, p)
	}
	var bad []badKey
	if o.Print.isTable() || len(parts) == 1 {
		err = o.printEach(ctx, f, parts, &bad)
	} else {
		err = o.printAll(ctx, f, parts, &bad)
	}
	if err != nil {
		return err
	}
	return f.unreadKeys(o.env, bad)
}

// listPart is one resource list prints.
type listPart struct {
	info inspect.ResourceInfo
	st   *bolt.Store
	// namesOnly: st was opened with keyStore, for names read from keys
	// (see listsNamesOnly).
	namesOnly bool
	// namespaced, ns and all are set by scope.
	namespaced bool
	ns         string
	all        bool
}

// scope sets what part lists: the namespace and whether the resource is
// namespaced, told by its first object.
func (o *listOptions) scope(ctx context.Context, p *listPart) error {
	first, err := firstObject(ctx, p.st)
	if p.namesOnly {
		first, err = firstKeyObject(ctx, p.st)
	}
	if err != nil && !errors.Is(err, bolt.ErrCorrupt) {
		return fmt.Errorf("read %s: %w", displayName(p.info), err)
	}
	p.namespaced = first == nil || isNamespaced(first)
	p.ns, p.all = o.Filter.scope(p.info)
	if !p.namespaced {
		p.ns, p.all = "", true
	}
	return nil
}

// objects returns the sequence of part's selected objects, sorted when
// --sort-by is given.
func (o *listOptions) objects(ctx context.Context, p *listPart, bar *progress.Bar, count *int, bad *[]badKey) iter.Seq2[runtime.Object, error] {
	if p.namesOnly {
		return scanNames(ctx, p.st, p.info, p.ns, &o.Filter, bar, count)
	}
	seq := scanObjects(ctx, p.st, p.info, p.ns, &o.Filter, bar, count, bad)
	if o.Print.SortBy == "" {
		return seq
	}
	s, _ := newSorter(o.Print.SortBy) // checked by Validate
	return s.sorted(p.st, p.info, seq, bad)
}

// printPart prints part's selected objects with pr. Sorted by a printer
// of rows (tables, custom columns, names), it renders each object's row in
// the pass that reads its sort value, then prints the sorted rows: each
// object is decoded once. Other printers get the objects sorted (see
// sorter.sorted).
func (o *listOptions) printPart(ctx context.Context, pr printers.Printer, w io.Writer, p *listPart, bar *progress.Bar, count *int, bad *[]badKey) error {
	if rp, ok := pr.(printers.RowPrinter); ok && o.Print.SortBy != "" && !p.namesOnly {
		s, _ := newSorter(o.Print.SortBy) // checked by Validate
		return rp.PrintRows(w, s.sortedRows(p.info, scanObjects(ctx, p.st, p.info, p.ns, &o.Filter, bar, count, bad), rp.Row))
	}
	return pr.Print(w, o.objects(ctx, p, bar, count, bad))
}

// printEach prints each part with a printer of its own: tables one after
// the other, separated by an empty line.
func (o *listOptions) printEach(ctx context.Context, f *snapshotFile, parts []listPart, bad *[]badKey) error {
	printed := false
	for i := range parts {
		p := &parts[i]
		if err := o.scope(ctx, p); err != nil {
			return err
		}
		pr, err := o.Print.printer(o.env, kindOf(p.info.Identity), true, p.all && p.namespaced, len(parts) > 1, f.printerColumns(ctx, p.info))
		if err != nil {
			return err
		}
		warnIncomplete(o.env, p.info)
		bar := o.env.progressBar("list "+displayName(p.info), progressTotal(p.info, p.ns), false)
		var count int
		w := &separated{w: o.env.Stdout, sep: printed && o.Print.isTable()}
		err = o.printPart(ctx, pr, w, p, bar, &count, bad)
		bar.Finish()
		if err != nil {
			return err
		}
		printed = printed || w.wrote
		if count == 0 && len(parts) == 1 && (o.Print.isTable() || o.Print.Output == printers.Name) {
			o.noneFound(p.info, p.ns, p.all)
		}
	}
	if len(parts) > 1 && !printed && (o.Print.isTable() || o.Print.Output == printers.Name) {
		fmt.Fprintln(o.env.Stderr, "No resources found")
	}
	return nil
}

// printAll prints the objects of several parts as one document (a List,
// names, a template's output), each object with its kind.
func (o *listOptions) printAll(ctx context.Context, _ *snapshotFile, parts []listPart, bad *[]badKey) error {
	for i := range parts {
		if err := o.scope(ctx, &parts[i]); err != nil {
			return err
		}
		warnIncomplete(o.env, parts[i].info)
	}
	pr, err := o.Print.printer(o.env, schema.GroupVersionKind{}, true, false, true, nil)
	if err != nil {
		return err
	}
	if rp, ok := pr.(printers.RowPrinter); ok && o.Print.SortBy != "" {
		return o.printAllRows(ctx, rp, parts, bad)
	}
	return pr.Print(o.env.Stdout, func(yield func(runtime.Object, error) bool) {
		for i := range parts {
			p := &parts[i]
			var count int
			for obj, err := range o.objects(ctx, p, nil, &count, bad) {
				if err == nil {
					obj, err = withKind(obj, p.info)
				}
				if !yield(obj, err) || err != nil {
					return
				}
			}
		}
	})
}

// printAllRows is printAll sorted, for a printer of rows: each part's
// rows sorted apart, as printAll sorts each part's objects.
func (o *listOptions) printAllRows(ctx context.Context, rp printers.RowPrinter, parts []listPart, bad *[]badKey) error {
	s, _ := newSorter(o.Print.SortBy) // checked by Validate
	return rp.PrintRows(o.env.Stdout, func(yield func(printers.Row, error) bool) {
		for i := range parts {
			p := &parts[i]
			var count int
			render := func(obj runtime.Object) (printers.Row, error) {
				obj, err := withKind(obj, p.info)
				if err != nil {
					return printers.Row{}, err
				}
				return rp.Row(obj)
			}
			for r, err := range s.sortedRows(p.info, scanObjects(ctx, p.st, p.info, p.ns, &o.Filter, nil, &count, bad), render) {
				if !yield(r, err) || err != nil {
					return
				}
			}
		}
	})
}

// separated writes sep (an empty line) before the first bytes written to
// w, and records whether anything was.
type separated struct {
	w     io.Writer
	sep   bool
	wrote bool
}

func (s *separated) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if !s.wrote && s.sep {
		if _, err := io.WriteString(s.w, "\n"); err != nil {
			return 0, err
		}
	}
	s.wrote = true
	return s.w.Write(b)
}

// noneFound tells, on stderr, that nothing matched, as kubectl does, and
// where the objects are when other namespaces hold them.
func (o *listOptions) noneFound(info inspect.ResourceInfo, ns string, all bool) {
	switch {
	case all:
		fmt.Fprintln(o.env.Stderr, "No resources found")
	case info.Objects > 0 && o.Filter.labels.Empty() && o.Filter.fields.Empty():
		fmt.Fprintf(o.env.Stderr, "No resources found in %s namespace (the file holds %d %s in other namespaces: use -A or -n).\n",
			ns, info.Objects, displayName(info))
	default:
		fmt.Fprintf(o.env.Stderr, "No resources found in %s namespace.\n", ns)
	}
}

// warnIncomplete warns, on stderr, that a resource's cache is not a
// complete picture of the server: never listed, or a relist interrupted,
// or objects lost since.
func warnIncomplete(env *Env, info inspect.ResourceInfo) {
	switch info.State {
	case inspect.StateComplete:
	case inspect.StateNew:
		fmt.Fprintf(env.Stderr, "warning: %s was never listed into this file: it holds only the changes watched since, not every object\n", displayName(info))
	case inspect.StateRelisting:
		fmt.Fprintf(env.Stderr, "warning: a relist of %s was interrupted: the file shows the state before it, which may be out of date\n", displayName(info))
	case inspect.StateFilling:
		fmt.Fprintf(env.Stderr, "warning: the first list of %s into this file did not complete: the file shows part of it\n", displayName(info))
	default:
		fmt.Fprintf(env.Stderr, "warning: %s is incomplete in this file (%s): objects may be missing\n", displayName(info), info.Reason)
	}
}
