package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// checkOutput returns a usage error for a format not in allowed.
func checkOutput(format string, allowed []string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return usageErrorf("unknown output format %q: allowed formats are %s", format, strings.Join(allowed, ", "))
}

// outputHelp is the help of -o.
func outputHelp(allowed []string) string {
	return "output format: one of " + strings.Join(allowed, ", ")
}

// listOptions is `snapshot list FILE RESOURCE`.
type listOptions struct {
	env    *Env
	common *commonOptions

	File      string
	Resource  string
	Filter    filterOptions
	Output    string
	NoHeaders bool
}

func newListCommand(env *Env, common *commonOptions) *cobra.Command {
	o := &listOptions{env: env, common: common}
	cmd := &cobra.Command{
		Use:   "list FILE RESOURCE",
		Short: "List the objects of a resource, as kubectl get does",
		Long: `List the objects of a resource recorded in FILE, as 'kubectl get RESOURCE' lists them
from a cluster: a table by default (pods: NAME READY STATUS RESTARTS AGE), or json/yaml
(a List document), or names.

RESOURCE is what kubectl accepts where the file allows it: pods, pod, po, deployments.apps,
deploy, deployments.v1.apps, or the ID that 'snapshot info' prints.

Without -n or -A, objects of the namespace the resource was recorded for are listed, or
else of the "default" namespace, as in kubectl. Objects are streamed from the file in
key order: memory stays flat for any number of objects.`,
		Example: `  # Pods of namespace kube-system
  snapshot list cache.db pods -n kube-system

  # All pods with their IP and node, without the header
  snapshot list cache.db po -A -o wide --no-headers

  # Deployments labelled app=web in all namespaces, as YAML
  snapshot list cache.db deployments.apps -A -l app=web -o yaml

  # One pod by name
  snapshot list cache.db pods -n web --field-selector metadata.name=web-0`,
		Args:              usageArgs(cobra.ExactArgs(2)),
		ValidArgsFunction: completeFileResource(env, common),
		RunE:              runE(o),
	}
	o.Filter.addFlags(cmd, false)
	cmd.Flags().StringVarP(&o.Output, "output", "o", printers.Table, outputHelp(printers.Formats))
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "leave out the header row of tables")
	registerCompletions(cmd, env, common, printers.Formats)
	return cmd
}

func (o *listOptions) Complete(cmd *cobra.Command, args []string) error {
	o.File, o.Resource = args[0], args[1]
	o.Filter.complete(cmd)
	return nil
}

func (o *listOptions) Validate() error {
	if err := checkOutput(o.Output, printers.Formats); err != nil {
		return err
	}
	return o.Filter.validate()
}

func (o *listOptions) Run(ctx context.Context) (err error) {
	f, err := openSnapshot(ctx, o.env, o.File, o.common.open())
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	info, err := resolveResource(o.File, f.resources, o.Resource)
	if err != nil {
		return err
	}
	if err := o.Filter.checkFields(info); err != nil {
		return err
	}
	st, err := f.store(ctx, info, true)
	if err != nil {
		return err
	}
	first, err := firstObject(ctx, st)
	if err != nil {
		return fmt.Errorf("read %s: %w", displayName(info), err)
	}
	namespaced := isNamespaced(first)
	ns, all := o.Filter.scope(info)
	if !namespaced {
		ns, all = "", true
	}
	p, err := printers.New(printers.Options{
		Format:          o.Output,
		Kind:            kindOf(info.Identity),
		List:            true,
		NoHeaders:       o.NoHeaders,
		NamespaceColumn: all && namespaced,
		Now:             o.env.Now,
	})
	if err != nil {
		return usageErrorf("%v", err)
	}
	bar := o.env.progressBar("list "+displayName(info), progressTotal(info, ns), false)
	defer bar.Finish()
	var count int
	if err := p.Print(o.env.Stdout, scanObjects(ctx, st, info, ns, &o.Filter, bar, &count)); err != nil {
		return err
	}
	bar.Finish()
	if count == 0 && (o.Output == printers.Table || o.Output == printers.Wide || o.Output == printers.Name) {
		o.noneFound(info, ns, all)
	}
	return nil
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
