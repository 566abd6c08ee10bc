package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// indexOptions is `snapshot index FILE RESOURCE INDEX [VALUE]`.
type indexOptions struct {
	fileCommand

	Resource string
	Index    string
	Value    string
	Counts   bool

	valueGiven bool
}

func newIndexCommand(c command) *cobra.Command {
	o := &indexOptions{fileCommand: c.file()}
	cmd := &cobra.Command{
		Use:   "index FILE RESOURCE INDEX [VALUE]",
		Short: "Show the values of an index and the keys filed under them",
		Long: `Show the index entries recorded for a resource: every value of INDEX, each followed by the
keys of the objects filed under it (indented), in order. With VALUE, only the keys under
that value, one per line. With --counts, each value with its number of keys.

Values that are empty or hold spaces or control characters are printed quoted.

Only keys whose object the file holds are printed: an index entry naming a key without
an object (verify's index-without-item) is named on standard error after the others,
and the exit code is 5, as list's is for objects it cannot read. Objects are not
decoded: a sealed resource needs no --key-file.`,
		Example: `  # Every namespace and its pods
  snapshot index cache.db pods namespace

  # The pods of one node
  snapshot index cache.db pods nodeName node-1

  # How many pods each node has
  snapshot index cache.db pods nodeName --counts`,
		Args:              usageArgs(cobra.RangeArgs(3, 4)),
		ValidArgsFunction: completeIndexArgs(c.env, c.common),
		RunE:              runE(o),
	}
	cmd.Flags().BoolVar(&o.Counts, "counts", false, "print each value with its number of keys instead of the keys")
	return cmd
}

func (o *indexOptions) Complete(_ *cobra.Command, args []string) error {
	o.File, o.Resource, o.Index = args[0], args[1], args[2]
	if len(args) == 4 {
		o.Value, o.valueGiven = args[3], true
	}
	return nil
}

func (o *indexOptions) Validate() error {
	if o.Counts && o.valueGiven {
		return usageErrorf("--counts lists every value; it takes no VALUE")
	}
	return nil
}

func (o *indexOptions) Run(ctx context.Context) (err error) {
	f, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	info, err := resolveResource(o.File, f.resources, o.Resource)
	if err != nil {
		return err
	}
	if !slices.Contains(info.Indexes, o.Index) {
		held := "It has no indexes"
		if len(info.Indexes) > 0 {
			held = "Its indexes: " + strings.Join(info.Indexes, ", ")
		}
		return withHint(mark(ErrNotFound, "%s has no index %q in %s", displayName(info), o.Index, o.File), "%s.", held)
	}
	st, err := f.store(ctx, info, false)
	if err != nil {
		return err
	}
	var dangling []danglingKey
	if o.valueGiven {
		keys, err := o.existing(st, info, o.Value, &dangling)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := fmt.Fprintln(o.env.Stdout, k); err != nil {
				return err
			}
		}
		if len(keys) == 0 && len(dangling) == 0 {
			fmt.Fprintf(o.env.Stderr, "No keys under value %s of index %q.\n", quoteValue(o.Value), o.Index)
		}
		return o.danglingError(info, dangling)
	}
	before := f.diag.Errors()
	values := st.ListIndexFuncValues(o.Index)
	if f.diag.Errors() != before {
		return mark(bolt.ErrCorrupt, "cannot read the values of index %q of %s (see the warnings above)", o.Index, displayName(info))
	}
	for _, v := range values {
		keys, err := o.existing(st, info, v, &dangling)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			continue // only keys without an item: a value no object has
		}
		var b strings.Builder
		if o.Counts {
			fmt.Fprintf(&b, "%s\t%d\n", quoteValue(v), len(keys))
		} else {
			b.WriteString(quoteValue(v))
			b.WriteByte('\n')
			for _, k := range keys {
				b.WriteString("    ")
				b.WriteString(k)
				b.WriteByte('\n')
			}
		}
		if _, err := fmt.Fprint(o.env.Stdout, b.String()); err != nil {
			return err
		}
	}
	if len(values) == 0 {
		fmt.Fprintf(o.env.Stderr, "Index %q of %s has no values.\n", o.Index, displayName(info))
	}
	return o.danglingError(info, dangling)
}

// danglingKey is an index entry whose key has no item (verify's
// index-without-item).
type danglingKey struct{ value, key string }

// existing returns the keys filed under value whose item exists, in
// order, and adds the others to dangling. It reads each item's envelope,
// not its object: a sealed resource needs no key.
func (o *indexOptions) existing(st *bolt.Store, info inspect.ResourceInfo, value string, dangling *[]danglingKey) ([]string, error) {
	keys, err := st.IndexKeys(o.Index, value)
	if err != nil {
		return nil, fmt.Errorf("read index %q of %s: %w", o.Index, displayName(info), err)
	}
	out := keys[:0]
	for _, k := range keys {
		_, exists, err := st.ResourceVersionOf(k)
		if err != nil && !errors.Is(err, bolt.ErrCorrupt) {
			return nil, fmt.Errorf("read %s %q: %w", displayName(info), k, err)
		}
		// A damaged item exists: it is listed, as list reports it.
		if !exists && err == nil {
			*dangling = append(*dangling, danglingKey{value: value, key: k})
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// danglingError names on stderr the index entries whose item does not
// exist and returns an error matching bolt.ErrCorrupt (exit code 5), as
// the other commands do for a partial answer; nil if there are none.
func (o *indexOptions) danglingError(info inspect.ResourceInfo, dangling []danglingKey) error {
	if len(dangling) == 0 {
		return nil
	}
	fmt.Fprintf(o.env.Stderr, "%s filed in index %q of %s without an object; every other key was printed:\n",
		plural(len(dangling), "key"), o.Index, displayName(info))
	for _, d := range dangling {
		fmt.Fprintf(o.env.Stderr, "  %s %s\n", quoteValue(d.value), d.key)
	}
	return withHint(mark(bolt.ErrCorrupt, "%s is damaged: index %q of %s names %s without an object, first %q under %s",
		o.File, o.Index, displayName(info), plural(len(dangling), "key"), dangling[0].key, quoteValue(dangling[0].value)),
		"Run 'snapshot verify %s' for the whole picture.", shellQuote(o.File))
}

// quoteValue quotes an index value that would be ambiguous printed as is.
func quoteValue(v string) string {
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '"' }) {
		return strconv.Quote(v)
	}
	return v
}
