package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// getOptions is `snapshot get FILE TYPE[,TYPE...] NAME...` or
// `snapshot get FILE TYPE/NAME...`.
type getOptions struct {
	fileCommand

	Args           []string
	Namespace      string
	Print          printOptions
	IgnoreNotFound bool

	namespaceGiven bool
}

func newGetCommand(c command) *cobra.Command {
	o := &getOptions{fileCommand: c.file()}
	cmd := &cobra.Command{
		Use:   "get FILE (TYPE[,TYPE...] NAME... | TYPE/NAME...)",
		Short: "Print objects by name",
		Long: `Print objects of resources recorded in FILE by name, as 'kubectl get' does: a table
with kubectl's columns by default (-o yaml, -o json and the other formats print the
objects themselves), several names of one type (get FILE pods a b), several types
(get FILE pods,cm web), or TYPE/NAME arguments, as 'list -o name' prints them.
One object is printed as itself; several as one List (json, yaml, templates).

Objects are looked up in the namespace given with -n, else the namespace the resource
was recorded for, else "default"; -n is ignored for cluster-scoped resources. Names that
are not found are reported on standard error after the objects that are, as kubectl
reports them (Error from cache file (NotFound): pods "web-9" not found), with exit code 3
(kubectl's 1 would not tell a missing object from a failure), or 0 with
--ignore-not-found.

managedFields are left out unless --show-managed-fields is given, as in kubectl. The
objects of a sealed resource need --key-file, except with -o name: names are stored in
clear.`,
		Example: `  # A pod, as kubectl get prints it
  snapshot get cache.db pods web-0 -n web

  # The same pod as YAML
  snapshot get cache.db pods web-0 -n web -o yaml

  # Two pods and a config map, as 'list -o name' prints them
  snapshot get cache.db pod/web-0 pod/web-1 configmap/web -n web

  # A node's addresses
  snapshot get cache.db nodes node-1 -o jsonpath='{.status.addresses[*].address}'`,
		Args:              usageArgs(cobra.MinimumNArgs(2)),
		ValidArgsFunction: completeFileResourceName(c.env, c.common),
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", `namespace of the objects (default: the namespace the resource was recorded for, else "default")`)
	cmd.Flags().BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "names that are not found are no error")
	o.Print.addFlags(cmd, printers.Table)
	registerCompletions(cmd, c.env, c.common, printers.AllFormats)
	return cmd
}

func (o *getOptions) Complete(cmd *cobra.Command, args []string) error {
	o.File, o.Args = args[0], args[1:]
	o.namespaceGiven = cmd.Flags().Changed("namespace")
	return nil
}

func (o *getOptions) Validate() error {
	for _, a := range o.Args {
		if a == "" {
			return usageErrorf("NAME must not be empty")
		}
	}
	return o.Print.validate(false)
}

// found is an object get found, with the target it belongs to.
type found struct {
	t   *target
	obj runtime.Object
}

func (o *getOptions) Run(ctx context.Context) (err error) {
	f, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	nsPick := ""
	if o.namespaceGiven {
		nsPick = o.Namespace
	}
	targets, err := parseTargets(o.File, f.resources, o.Args, nsPick)
	if err != nil {
		return err
	}
	var objs []found
	var missing []error
	var hints []string
	for i := range targets {
		t := &targets[i]
		if len(t.names) == 0 {
			return withHint(usageErrorf("get needs object names for %s", displayName(t.info)),
				"List every object with 'snapshot list %s %s'.", shellQuote(o.File), shellQuote(displayName(t.info)))
		}
		// Names are stored in clear: -o name of a sealed resource reads
		// keys, without --key-file.
		namesOnly := o.Print.Output == printers.Name && isSealed(t.info)
		st, err := f.store(ctx, t.info, !namesOnly)
		if err != nil {
			return err
		}
		ns := o.Namespace
		if !o.namespaceGiven {
			ns = t.info.Identity.Namespace
			if ns == "" {
				ns = "default"
			}
		}
		before := len(missing)
		for _, name := range t.names {
			obj, err := f.getOne(st, t.info, ns, name, namesOnly)
			switch {
			case errors.Is(err, ErrNotFound):
				missing = append(missing, err)
				continue
			case err != nil:
				return err
			}
			objs = append(objs, found{t: t, obj: obj})
		}
		if len(missing) > before {
			hints = append(hints, listHint(ctx, o.File, t.info, st, ns))
		}
	}
	single := len(targets) == 1 && len(targets[0].names) == 1
	if err := o.print(ctx, f, objs, targets, single); err != nil {
		return err
	}
	if len(missing) == 0 || o.IgnoreNotFound {
		return nil
	}
	// As kubectl: one NotFound line per name, after the objects found.
	for _, e := range missing[:len(missing)-1] {
		printError(o.env.Stderr, e, "")
	}
	return withHint(missing[len(missing)-1], "%s", strings.Join(hints, "\n"))
}

// listHint is the hint of a name get did not find: the list command that
// shows the names of the resource, in namespace ns if it is namespaced
// (told by its first object; a resource get could not decode is taken as
// namespaced).
func listHint(ctx context.Context, path string, info inspect.ResourceInfo, st *bolt.Store, ns string) string {
	first, _ := firstObject(ctx, st)
	if first != nil && !isNamespaced(first) {
		return fmt.Sprintf("List the names with 'snapshot list %s %s'.", shellQuote(path), shellQuote(displayName(info)))
	}
	return fmt.Sprintf("List the names with 'snapshot list %s %s -n %s' (or -A).", shellQuote(path), shellQuote(displayName(info)), shellQuote(ns))
}

// print writes the objects found: one document for them all, or for
// tables one table per resource.
func (o *getOptions) print(ctx context.Context, f *snapshotFile, objs []found, targets []target, single bool) error {
	if len(objs) == 0 {
		return nil
	}
	if o.Print.isTable() {
		first := true
		for i := range targets {
			t := &targets[i]
			var of []runtime.Object
			for _, fo := range objs {
				if fo.t == t {
					of = append(of, fo.obj)
				}
			}
			if len(of) == 0 {
				continue
			}
			if !first {
				if _, err := fmt.Fprintln(o.env.Stdout); err != nil {
					return err
				}
			}
			first = false
			p, err := o.Print.printer(o.env, targetKind(t), true, false, len(targets) > 1, f.printerColumns(ctx, t.info))
			if err != nil {
				return err
			}
			if err := p.Print(o.env.Stdout, sliceSeq(of)); err != nil {
				return err
			}
		}
		return nil
	}
	p, err := o.Print.printer(o.env, targetKind(&targets[0]), !single, false, len(targets) > 1, nil)
	if err != nil {
		return err
	}
	return p.Print(o.env.Stdout, func(yield func(runtime.Object, error) bool) {
		for _, fo := range objs {
			obj := fo.obj
			if len(targets) > 1 {
				var err error
				if obj, err = withKind(obj, fo.t.info); err != nil {
					yield(nil, err)
					return
				}
			}
			if !yield(obj, nil) {
				return
			}
		}
	})
}

// sliceSeq yields objs.
func sliceSeq(objs []runtime.Object) iter.Seq2[runtime.Object, error] {
	return func(yield func(runtime.Object, error) bool) {
		for _, obj := range objs {
			if !yield(obj, nil) {
				return
			}
		}
	}
}
