package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/jsondoc"
	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store/bolt"
)

// exportFormats are the output formats of export.
var exportFormats = []string{printers.YAML, printers.JSON}

// serverSetMetadata are the metadata fields the API server sets, which
// export removes (see the export command's help for why).
var serverSetMetadata = []string{
	"resourceVersion", "uid", "selfLink", "creationTimestamp", "generation",
	"managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences",
}

// lastAppliedAnnotation is where client-side kubectl apply keeps the
// configuration it applied last.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// exportOptions is `snapshot export FILE RESOURCE`.
type exportOptions struct {
	fileCommand

	Resource string
	Filter   filterOptions
	Output   string
	Raw      bool
	NoStatus bool
}

func newExportCommand(c command) *cobra.Command {
	o := &exportOptions{fileCommand: c.file()}
	cmd := &cobra.Command{
		Use:   "export FILE RESOURCE",
		Short: "Write the objects of a resource as a List for kubectl apply or test fixtures",
		Long: `Write the objects of a resource as one List document (YAML by default) that
'kubectl apply -f' accepts, or that tests load as fixtures. Objects of all namespaces
are written unless -n is given; -l and --field-selector select as in list.

Every object gets its apiVersion and kind. Unless --raw is given, what the API server
sets and kubectl apply must not send back is removed:

  metadata.resourceVersion   a stale version makes apply fail with a conflict
  metadata.uid               a uid that does not match makes apply fail
  metadata.creationTimestamp, generation, selfLink, managedFields,
  deletionTimestamp, deletionGracePeriodSeconds
                             set by the server; managedFields would confuse field ownership
  metadata.ownerReferences   they name owners by uid: in another cluster (or after the
                             owners are recreated) the garbage collector would delete
                             the applied objects
  the kubectl.kubernetes.io/last-applied-configuration annotation
                             kubectl apply writes it afresh
  spec.clusterIP, spec.clusterIPs of Services (unless headless)
                             allocated by the server from its own range

status is kept (kubectl apply ignores it for resources with a status subresource, and
fixtures usually want it); --no-status removes it. Objects are streamed in key order:
memory stays flat for any number of objects.`,
		Example: `  # Re-create the deployments of one namespace elsewhere
  snapshot export cache.db deploy -n web > web.yaml && kubectl apply -f web.yaml

  # A test fixture with every field as cached
  snapshot export cache.db pods --raw -o json > testdata/pods.json`,
		Args:              usageArgs(cobra.ExactArgs(2)),
		ValidArgsFunction: completeFileResource(c.env, c.common),
		RunE:              runE(o),
	}
	o.Filter.addFlags(cmd, true)
	cmd.Flags().StringVarP(&o.Output, "output", "o", printers.YAML, outputHelp(exportFormats))
	cmd.Flags().BoolVar(&o.Raw, "raw", false, "write the objects as cached, without removing server-set fields")
	cmd.Flags().BoolVar(&o.NoStatus, "no-status", false, "remove status too")
	registerCompletions(cmd, c.env, c.common, exportFormats)
	return cmd
}

func (o *exportOptions) Complete(cmd *cobra.Command, args []string) error {
	o.File, o.Resource = args[0], args[1]
	o.Filter.complete(cmd)
	return nil
}

func (o *exportOptions) Validate() error {
	if err := checkOutput(o.Output, exportFormats); err != nil {
		return err
	}
	return o.Filter.validate()
}

func (o *exportOptions) Run(ctx context.Context) (err error) {
	defer streamingGC()()
	f, err := o.open(ctx)
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
	ns, _ := o.Filter.scope(info)
	first, err := firstObject(ctx, st)
	if err != nil && !errors.Is(err, bolt.ErrCorrupt) {
		return fmt.Errorf("read %s: %w", displayName(info), err)
	}
	if !isNamespaced(first) {
		ns = ""
	}
	p, err := printers.New(printers.Options{Format: o.Output, Kind: kindOf(info.Identity), List: true, ShowManagedFields: o.Raw, Transform: o.transform()})
	if err != nil {
		return usageErrorf("%v", err)
	}
	bar := o.env.progressBar("export "+displayName(info), progressTotal(info, ns), false)
	defer bar.Finish()
	var count int
	var bad []badKey
	if err := p.Print(o.env.Stdout, scanObjects(ctx, st, info, ns, &o.Filter, bar, &count, &bad)); err != nil {
		return err
	}
	bar.Finish()
	return f.unreadKeys(o.env, bad)
}

// transform returns the field stripping of the options.
func (o *exportOptions) transform() func(*jsondoc.Doc) {
	if o.Raw && !o.NoStatus {
		return nil
	}
	return func(d *jsondoc.Doc) {
		if o.NoStatus {
			d.Delete(d.Root(), "status")
		}
		if !o.Raw {
			stripServerFields(d)
		}
	}
}

// stripServerFields removes what the API server sets from an object's
// document (see the export command's help).
func stripServerFields(d *jsondoc.Doc) {
	root := d.Root()
	if md, ok := d.Get(root, "metadata"); ok && d.IsObject(md) {
		for _, k := range serverSetMetadata {
			d.Delete(md, k)
		}
		if ann, ok := d.Get(md, "annotations"); ok && d.IsObject(ann) {
			d.Delete(ann, lastAppliedAnnotation)
			if d.Len(ann) == 0 {
				d.Delete(md, "annotations")
			}
		}
	}
	str := func(n jsondoc.Node, keys ...string) string {
		v, ok := d.Lookup(n, keys...)
		if !ok {
			return ""
		}
		s, _ := d.String(v)
		return s
	}
	if str(root, "kind") == "Service" && str(root, "apiVersion") == "v1" {
		// A headless service's "None" is the user's, not an allocation.
		if spec, ok := d.Get(root, "spec"); ok && d.IsObject(spec) && str(spec, "clusterIP") != "None" {
			d.Delete(spec, "clusterIP")
			d.Delete(spec, "clusterIPs")
		}
	}
}
