package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// infoFormats are the output formats of info.
var infoFormats = []string{"text", "json", "yaml"}

// infoOptions is `snapshot info FILE`.
type infoOptions struct {
	fileCommand

	Output string
}

// fileInfo is what info reports, in json and yaml as in text.
type fileInfo struct {
	File      string         `json:"file"`
	Size      int64          `json:"size"`
	PageSize  int            `json:"pageSize"`
	Modified  time.Time      `json:"modified"`
	Resources []resourceInfo `json:"resources"`
}

type resourceInfo struct {
	Name              string      `json:"name"`
	ID                string      `json:"id"`
	Group             string      `json:"group"`
	Version           string      `json:"version"`
	Resource          string      `json:"resource"`
	Kind              string      `json:"kind"`
	Scope             scopeInfo   `json:"scope"`
	Cluster           string      `json:"cluster,omitempty"`
	TransformVersion  string      `json:"transformVersion,omitempty"`
	Objects           int64       `json:"objects"`
	ResourceVersion   string      `json:"resourceVersion"`
	State             string      `json:"state"`
	Complete          bool        `json:"complete"`
	RelistInterrupted bool        `json:"relistInterrupted"`
	Reason            string      `json:"reason,omitempty"`
	Schema            int         `json:"schema"`
	Codec             string      `json:"codec"`
	Indexes           []indexInfo `json:"indexes"`
	IndexVersion      string      `json:"indexVersion,omitempty"`
	Bytes             int64       `json:"bytes"`
	Created           *time.Time  `json:"created,omitempty"`
	LastWrite         *time.Time  `json:"lastWrite,omitempty"`
	LastRelist        *time.Time  `json:"lastRelist,omitempty"`
	Problem           string      `json:"problem,omitempty"`
	Sealed            *sealedInfo `json:"sealed,omitempty"`
}

type scopeInfo struct {
	Namespace     string `json:"namespace,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
	FieldSelector string `json:"fieldSelector,omitempty"`
	Shard         string `json:"shard,omitempty"`
}

type indexInfo struct {
	Name string `json:"name"`
	// Values is the number of distinct indexed values, -1 when they could
	// not be read.
	Values int `json:"values"`
}

func newInfoCommand(c command) *cobra.Command {
	o := &infoOptions{fileCommand: c.file()}
	cmd := &cobra.Command{
		Use:   "info FILE",
		Short: "Describe a cache file and the resources it holds",
		Long: `Describe a cache file: its size, page size and last write, and per resource its
group, version, resource and kind, the scope of its list/watch, the cluster its data
came from and the version of the transform that shaped its objects (a controller that
opens it with another one does not use the data), its object count and resourceVersion,
whether its data is complete (or a relist was interrupted), its schema version, codec,
indexes with their number of values, and the bytes it occupies.

Counts come from what the file records, not from reading every object: info answers
quickly on large files. The ID of each resource names it unambiguously in other
commands when a file holds one resource under several scopes.`,
		Example: `  snapshot info cache.db

  # Machine-readable
  snapshot info cache.db -o json`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeFiles(1),
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", outputHelp(infoFormats))
	registerCompletions(cmd, c.env, c.common, infoFormats)
	return cmd
}

func (o *infoOptions) Validate() error { return checkOutput(o.Output, infoFormats) }

func (o *infoOptions) Run(ctx context.Context) (err error) {
	f, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	out := fileInfo{File: o.File, Size: f.info.Size(), PageSize: f.db.PageSize(), Modified: f.info.ModTime().UTC(), Resources: []resourceInfo{}}
	for _, info := range f.resources {
		r, err := o.describe(ctx, f, info)
		if err != nil {
			return err
		}
		out.Resources = append(out.Resources, r)
	}
	if err := o.write(&out); err != nil {
		return err
	}
	// Everything readable was printed; unreadable metadata is damage.
	if n := unreadable(f.resources); n > 0 {
		return withHint(mark(bolt.ErrCorrupt, "%s: the metadata of %d resources is unreadable", o.File, n),
			"Run 'snapshot verify %s' for the whole picture.", shellQuote(o.File))
	}
	return nil
}

// write prints out in the output format.
func (o *infoOptions) write(out *fileInfo) error {
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(out, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.env.Stdout, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		_, err = o.env.Stdout.Write(b)
		return err
	}
	return writeInfoText(o.env.Stdout, out)
}

// describe gathers what info reports about one resource.
func (o *infoOptions) describe(ctx context.Context, f *snapshotFile, info inspect.ResourceInfo) (resourceInfo, error) {
	id := info.Identity
	r := resourceInfo{
		Name: displayName(info), ID: id.String(),
		Group: id.Group, Version: id.Version, Resource: id.Resource, Kind: id.Kind,
		Scope:   scopeInfo{Namespace: id.Namespace, LabelSelector: id.LabelSelector, FieldSelector: id.FieldSelector, Shard: id.Shard},
		Cluster: info.Cluster, TransformVersion: info.TransformVersion,
		Objects: info.Objects, ResourceVersion: info.ResourceVersion,
		State: string(info.State), Reason: info.Reason,
		Schema: info.Schema, Codec: info.Codec, IndexVersion: info.IndexVersion, Bytes: info.Bytes,
		Created: timePtr(info.Created), LastWrite: timePtr(info.LastWrite), LastRelist: timePtr(info.LastRelist),
		Problem: info.Problem, Indexes: []indexInfo{},
	}
	if info.Problem != "" {
		r.Name, r.ID = "(unreadable)", ""
		return r, nil
	}
	st, err := f.store(ctx, info, false)
	if err != nil {
		// A schema this binary does not read: report what is recorded.
		r.Problem = err.Error()
		return r, nil
	}
	state, err := st.State()
	if err != nil {
		return r, fmt.Errorf("state of %s: %w", r.Name, err)
	}
	r.Complete, r.RelistInterrupted = state.Complete, state.RelistInterrupted
	if r.Sealed, err = f.sealedInfo(ctx, info); err != nil {
		return r, err
	}
	for _, name := range info.Indexes {
		before := f.diag.Errors()
		n := len(st.ListIndexFuncValues(name))
		if f.diag.Errors() != before {
			n = -1
		}
		r.Indexes = append(r.Indexes, indexInfo{Name: name, Values: n})
	}
	return r, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// writeInfoText writes info's human-readable form.
func writeInfoText(w io.Writer, out *fileInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "File:\t%s\n", out.File)
	fmt.Fprintf(tw, "Size:\t%s (%d bytes)\n", progress.Size(out.Size), out.Size)
	fmt.Fprintf(tw, "Page size:\t%s\n", progress.Size(int64(out.PageSize)))
	fmt.Fprintf(tw, "Modified:\t%s\n", out.Modified.Format(time.RFC3339))
	fmt.Fprintf(tw, "Resources:\t%d\n", len(out.Resources))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range out.Resources {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "\n%s\n", r.Name)
		if r.ID != "" {
			fmt.Fprintf(tw, "  ID:\t%s\n", r.ID)
			gv := r.Version
			if r.Group != "" {
				gv = r.Group + "/" + r.Version
			}
			fmt.Fprintf(tw, "  Kind:\t%s (%s, resource %s)\n", orNone(r.Kind), gv, r.Resource)
			fmt.Fprintf(tw, "  Scope:\t%s\n", scopeString(bolt.Identity{Scope: store.Scope(r.Scope)}))
			fmt.Fprintf(tw, "  Cluster:\t%s\n", orNone(r.Cluster))
			fmt.Fprintf(tw, "  Transform:\t%s\n", orNone(r.TransformVersion))
			fmt.Fprintf(tw, "  Objects:\t%d\n", r.Objects)
			fmt.Fprintf(tw, "  Resource version:\t%s\n", orNone(r.ResourceVersion))
			fmt.Fprintf(tw, "  State:\t%s\n", stateText(&r))
			fmt.Fprintf(tw, "  Schema:\t%d\n", r.Schema)
			fmt.Fprintf(tw, "  Codec:\t%s\n", r.Codec)
			if r.Sealed != nil {
				fmt.Fprintf(tw, "  Sealed:\t%s\n", sealedText(r.Sealed))
			}
			fmt.Fprintf(tw, "  Indexes:\t%s\n", indexesText(&r))
			fmt.Fprintf(tw, "  Bytes:\t%s (%d bytes)\n", progress.Size(r.Bytes), r.Bytes)
			for _, t := range []struct {
				label string
				t     *time.Time
			}{{"Created", r.Created}, {"Last write", r.LastWrite}, {"Last relist", r.LastRelist}} {
				v := "<never>"
				if t.t != nil {
					v = t.t.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "  %s:\t%s\n", t.label, v)
			}
		} else {
			fmt.Fprintf(tw, "  Bytes:\t%s (%d bytes)\n", progress.Size(r.Bytes), r.Bytes)
		}
		if r.Problem != "" {
			fmt.Fprintf(tw, "  Problem:\t%s\n", r.Problem)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func stateText(r *resourceInfo) string {
	var s string
	switch {
	case r.Complete:
		s = "complete"
	case r.State == string(inspect.StateNew) || (r.State == string(inspect.StateRelisting) && r.ResourceVersion == ""):
		s = "new (never completely listed)"
	case r.State == string(inspect.StateFilling):
		s = "filling (a first list, written in place, did not complete: the file holds part of it)"
	default:
		s = "incomplete"
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	if r.RelistInterrupted && r.State != string(inspect.StateFilling) {
		s += "; a relist was interrupted (its staged data is ignored, the previous content kept)"
	}
	return s
}

func indexesText(r *resourceInfo) string {
	if len(r.Indexes) == 0 {
		return "<none>"
	}
	parts := make([]string, len(r.Indexes))
	for i, x := range r.Indexes {
		if x.Values < 0 {
			parts[i] = x.Name + " (values unreadable)"
		} else {
			parts[i] = fmt.Sprintf("%s (%s)", x.Name, plural(x.Values, "value"))
		}
	}
	s := strings.Join(parts, ", ")
	if r.IndexVersion != "" {
		s += "; index version " + r.IndexVersion
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
