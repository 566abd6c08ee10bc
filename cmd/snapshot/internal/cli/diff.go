package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/cmd/snapshot/internal/textdiff"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// diffOptions is `snapshot diff FILE1 FILE2 [RESOURCE]`.
type diffOptions struct {
	command

	File1, File2 string
	Resource     string
	Show         bool
	Context      int
	ExitCode     bool
}

func newDiffCommand(c command) *cobra.Command {
	o := &diffOptions{command: c}
	cmd := &cobra.Command{
		Use:   "diff FILE1 FILE2 [RESOURCE]",
		Short: "Show the objects added, removed and changed between two cache files",
		Long: `Compare two cache files, resource by resource (resources are paired by their recorded
identity, or RESOURCE is looked up in both files): the keys only in FILE2 (+, added),
only in FILE1 (-, removed), and in both with another resourceVersion (~, changed).
Each resource starts with a summary line.

With --show, each changed object is followed by a unified diff of its YAML in FILE1 and
FILE2. Keys and resourceVersions are read without decoding the objects; --show decodes
the changed ones only.`,
		Example: `  # What changed in the cache since yesterday's backup
  snapshot diff yesterday.db today.db

  # The field changes of the pods that changed
  snapshot diff yesterday.db today.db pods --show

  # In a script: exit code 7 when the files differ
  snapshot diff a.db b.db --exit-code > /dev/null`,
		Args:              usageArgs(cobra.RangeArgs(2, 3)),
		ValidArgsFunction: completeDiffArgs(c.env, c.common),
		RunE:              runE(o),
	}
	cmd.Flags().BoolVar(&o.Show, "show", false, "show the field changes of each changed object as a unified diff of its YAML")
	cmd.Flags().IntVarP(&o.Context, "unified", "U", 3, "lines of context around the changes shown by --show")
	cmd.Flags().BoolVar(&o.ExitCode, "exit-code", false, "exit with code 7 when the files differ")
	return cmd
}

func (o *diffOptions) Complete(_ *cobra.Command, args []string) error {
	o.File1, o.File2 = args[0], args[1]
	if len(args) == 3 {
		o.Resource = args[2]
	}
	return nil
}

func (o *diffOptions) Validate() error {
	if o.Context < 0 {
		return usageErrorf("--unified must not be negative")
	}
	return nil
}

// diffPair is one resource in the two files; a nil side is absent.
type diffPair struct {
	a, b *inspect.ResourceInfo
}

func (p diffPair) name() string {
	if p.a != nil {
		return displayName(*p.a)
	}
	return displayName(*p.b)
}

func (o *diffOptions) Run(ctx context.Context) (err error) {
	fa, err := openSnapshot(ctx, o.env, o.File1, o.common.open())
	if err != nil {
		return err
	}
	defer closeInto(fa, &err)
	fb, err := openSnapshot(ctx, o.env, o.File2, o.common.open())
	if err != nil {
		return err
	}
	defer closeInto(fb, &err)
	pairs, err := o.pairs(fa, fb)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.env.Stdout, "--- %s\n+++ %s\n", o.File1, o.File2)
	differ := false
	for _, p := range pairs {
		d, err := o.diffResource(ctx, fa, fb, p)
		if err != nil {
			return err
		}
		differ = differ || d
	}
	if differ && o.ExitCode {
		return ErrDifferent
	}
	return nil
}

// pairs pairs the resources of the two files.
func (o *diffOptions) pairs(fa, fb *snapshotFile) ([]diffPair, error) {
	if o.Resource != "" {
		a, errA := resolveResource(o.File1, fa.resources, o.Resource)
		b, errB := resolveResource(o.File2, fb.resources, o.Resource)
		switch {
		case errA != nil && errB != nil:
			if !errors.Is(errA, ErrNotFound) {
				return nil, errA
			}
			return nil, errB
		case errA != nil && !errors.Is(errA, ErrNotFound):
			return nil, errA
		case errB != nil && !errors.Is(errB, ErrNotFound):
			return nil, errB
		}
		var p diffPair
		if errA == nil {
			p.a = &a
		}
		if errB == nil {
			p.b = &b
		}
		if p.a != nil && p.b != nil && p.a.Identity != p.b.Identity {
			fmt.Fprintf(o.env.Stderr, "warning: %s is recorded with different identities: %s in %s, %s in %s\n",
				o.Resource, p.a.Identity, o.File1, p.b.Identity, o.File2)
		}
		return []diffPair{p}, nil
	}
	byID := map[string]*diffPair{}
	var ids []string
	add := func(infos []inspect.ResourceInfo, first bool) {
		for i := range infos {
			if infos[i].Problem != "" {
				continue
			}
			id := infos[i].Identity.String()
			p := byID[id]
			if p == nil {
				p = &diffPair{}
				byID[id] = p
				ids = append(ids, id)
			}
			if first {
				p.a = &infos[i]
			} else {
				p.b = &infos[i]
			}
		}
	}
	add(fa.resources, true)
	add(fb.resources, false)
	sort.Strings(ids)
	out := make([]diffPair, len(ids))
	for i, id := range ids {
		out[i] = *byID[id]
	}
	return out, nil
}

// change is one differing key.
type change struct {
	kind     byte // '+', '-', '~'
	key      string
	rvA, rvB string
}

// diffResource writes the differences of one resource and reports whether
// there are any.
func (o *diffOptions) diffResource(ctx context.Context, fa, fb *snapshotFile, p diffPair) (bool, error) {
	var sa, sb *bolt.Store
	var keysA, keysB []string
	var err error
	if p.a != nil {
		if sa, err = fa.store(ctx, *p.a, false); err != nil {
			return false, err
		}
		keysA = sa.ListKeys()
	}
	if p.b != nil {
		if sb, err = fb.store(ctx, *p.b, false); err != nil {
			return false, err
		}
		keysB = sb.ListKeys()
	}
	var changes []change
	unchanged := 0
	rvOf := func(s *bolt.Store, key string) (string, error) {
		rv, _, err := s.ResourceVersionOf(key)
		if err != nil {
			return "", fmt.Errorf("read %s %q: %w", p.name(), key, err)
		}
		return rv, nil
	}
	for i, j := 0, 0; i < len(keysA) || j < len(keysB); {
		switch {
		case j == len(keysB) || (i < len(keysA) && keysA[i] < keysB[j]):
			rv, err := rvOf(sa, keysA[i])
			if err != nil {
				return false, err
			}
			changes = append(changes, change{kind: '-', key: keysA[i], rvA: rv})
			i++
		case i == len(keysA) || keysB[j] < keysA[i]:
			rv, err := rvOf(sb, keysB[j])
			if err != nil {
				return false, err
			}
			changes = append(changes, change{kind: '+', key: keysB[j], rvB: rv})
			j++
		default:
			rvA, err := rvOf(sa, keysA[i])
			if err != nil {
				return false, err
			}
			rvB, err := rvOf(sb, keysB[j])
			if err != nil {
				return false, err
			}
			if rvA != rvB {
				changes = append(changes, change{kind: '~', key: keysA[i], rvA: rvA, rvB: rvB})
			} else {
				unchanged++
			}
			i, j = i+1, j+1
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	if err := o.writeSummary(p, changes, unchanged); err != nil {
		return false, err
	}
	for _, c := range changes {
		var line string
		switch c.kind {
		case '+':
			line = fmt.Sprintf("+ %s (rv %s)\n", c.key, c.rvB)
		case '-':
			line = fmt.Sprintf("- %s (rv %s)\n", c.key, c.rvA)
		default:
			line = fmt.Sprintf("~ %s (rv %s -> %s)\n", c.key, c.rvA, c.rvB)
		}
		if _, err := io.WriteString(o.env.Stdout, line); err != nil {
			return false, err
		}
		if o.Show && c.kind == '~' {
			if err := o.show(ctx, fa, fb, p, c); err != nil {
				return false, err
			}
		}
	}
	// A resourceVersion that moved without any object changing (a
	// bookmark) is not a difference of content.
	return len(changes) > 0 || p.a == nil || p.b == nil, nil
}

func (o *diffOptions) writeSummary(p diffPair, changes []change, unchanged int) error {
	var added, removed, changed int
	for _, c := range changes {
		switch c.kind {
		case '+':
			added++
		case '-':
			removed++
		default:
			changed++
		}
	}
	var where string
	switch {
	case p.a == nil:
		where = fmt.Sprintf(" (only in %s, rv %s)", o.File2, orNone(p.b.ResourceVersion))
	case p.b == nil:
		where = fmt.Sprintf(" (only in %s, rv %s)", o.File1, orNone(p.a.ResourceVersion))
	default:
		where = fmt.Sprintf(" (rv %s -> %s)", orNone(p.a.ResourceVersion), orNone(p.b.ResourceVersion))
	}
	_, err := fmt.Fprintf(o.env.Stdout, "%s%s: %d added, %d removed, %d changed, %d unchanged\n",
		p.name(), where, added, removed, changed, unchanged)
	return err
}

// show writes the unified diff of the YAML of a changed object.
func (o *diffOptions) show(ctx context.Context, fa, fb *snapshotFile, p diffPair, c change) error {
	ya, err := objectYAML(ctx, fa, *p.a, c.key)
	if err != nil {
		return err
	}
	yb, err := objectYAML(ctx, fb, *p.b, c.key)
	if err != nil {
		return err
	}
	d := textdiff.Unified("a/"+p.name()+"/"+c.key, "b/"+p.name()+"/"+c.key, ya, yb, o.Context)
	_, err = io.WriteString(o.env.Stdout, indent(d))
	return err
}

// objectYAML returns the YAML of the object stored under key.
func objectYAML(ctx context.Context, f *snapshotFile, info inspect.ResourceInfo, key string) (string, error) {
	st, err := f.store(ctx, info, true)
	if err != nil {
		return "", err
	}
	obj, exists, err := st.GetByKey(key)
	if err != nil {
		return "", fmt.Errorf("read %s %q in %s: %w", displayName(info), key, f.path, err)
	}
	if !exists {
		return "", nil // deleted since the keys were read: cannot happen under the lock
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return "", fmt.Errorf("%s %q is a %T, not a runtime.Object", displayName(info), key, obj)
	}
	m, err := printers.Content(ro, kindOf(info.Identity))
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(m)
	return string(b), err
}

// indent shifts the lines of a --show diff right, under their "~" line.
func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("    ")
			b.WriteString(l)
		}
	}
	return b.String()
}
