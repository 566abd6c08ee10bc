package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
)

// getOptions is `snapshot get FILE RESOURCE NAME`.
type getOptions struct {
	env    *Env
	common *commonOptions

	File      string
	Resource  string
	Name      string
	Namespace string
	Output    string

	namespaceGiven bool
}

func newGetCommand(env *Env, common *commonOptions) *cobra.Command {
	o := &getOptions{env: env, common: common}
	cmd := &cobra.Command{
		Use:   "get FILE RESOURCE NAME",
		Short: "Print one object",
		Long: `Print one object of a resource recorded in FILE, as YAML by default.

The object is looked up in the namespace given with -n, else the namespace the resource
was recorded for, else "default"; -n is ignored for cluster-scoped resources.`,
		Example: `  # A pod as YAML
  snapshot get cache.db pods web-0 -n web

  # A node as JSON
  snapshot get cache.db nodes node-1 -o json`,
		Args:              usageArgs(cobra.ExactArgs(3)),
		ValidArgsFunction: completeFileResourceName(env, common),
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", `namespace of the object (default: the namespace the resource was recorded for, else "default")`)
	cmd.Flags().StringVarP(&o.Output, "output", "o", printers.YAML, outputHelp(printers.Formats))
	registerCompletions(cmd, env, common, printers.Formats)
	return cmd
}

func (o *getOptions) Complete(cmd *cobra.Command, args []string) error {
	o.File, o.Resource, o.Name = args[0], args[1], args[2]
	o.namespaceGiven = cmd.Flags().Changed("namespace")
	return nil
}

func (o *getOptions) Validate() error {
	if o.Name == "" {
		return usageErrorf("NAME must not be empty")
	}
	return checkOutput(o.Output, printers.Formats)
}

func (o *getOptions) Run(ctx context.Context) (err error) {
	f, err := openSnapshot(ctx, o.env, o.File, o.common.open())
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	info, err := resolveResource(o.File, f.resources, o.Resource)
	if err != nil {
		return err
	}
	st, err := f.store(ctx, info, true)
	if err != nil {
		return err
	}
	ns := o.Namespace
	if !o.namespaceGiven {
		ns = info.Identity.Namespace
		if ns == "" {
			ns = "default"
		}
	}
	// A namespaced object's key is namespace/name, a cluster-scoped
	// one's the name alone.
	var obj interface{}
	var exists bool
	for _, key := range []string{ns + "/" + o.Name, o.Name} {
		if obj, exists, err = st.GetByKey(key); err != nil {
			return fmt.Errorf("read %s %q: %w", displayName(info), key, err)
		}
		if exists {
			break
		}
	}
	if !exists {
		return withHint(mark(ErrNotFound, "%s %q not found in namespace %q of %s", displayName(info), o.Name, ns, o.File),
			"List the names with 'snapshot list %s %s -n %s' (or -A).", o.File, displayName(info), ns)
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return fmt.Errorf("%s %q is a %T, not a runtime.Object", displayName(info), o.Name, obj)
	}
	p, err := printers.New(printers.Options{Format: o.Output, Kind: kindOf(info.Identity), Now: o.env.Now})
	if err != nil {
		return usageErrorf("%v", err)
	}
	return p.Print(o.env.Stdout, printers.Single(ro))
}
