package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// compactOptions is `snapshot compact FILE --output OUT`.
type compactOptions struct {
	fileCommand
	outputFile
}

func newCompactCommand(c command) *cobra.Command {
	o := &compactOptions{fileCommand: c.file()}
	cmd := &cobra.Command{
		Use:   "compact FILE --output OUT",
		Short: "Write a compacted copy of a cache file",
		Long: `Write a compacted copy of FILE to OUT: the same buckets, keys and values, densely packed,
without the free pages a long-running cache accumulates. FILE is only read.

OUT must not exist unless --force is given, and can never be FILE itself. The copy is
written to a temporary file beside OUT, flushed to disk, checked (it must open as a
warmcache file, pass the bbolt structure check and hold the same resources and object
counts), and only then moved to OUT.`,
		Example: `  snapshot compact cache.db --output cache.compact.db

  # Replace an earlier copy
  snapshot compact cache.db --output /backups/cache.db --force`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeFiles(1),
		RunE:              runE(o),
	}
	o.outputFile.addFlags(cmd.Flags())
	return cmd
}

func (o *compactOptions) Validate() error { return o.outputFile.validate() }

func (o *compactOptions) Run(ctx context.Context) (err error) {
	f, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	if err := checkOutputPath(o.Output, o.File, o.Force); err != nil {
		return err
	}
	tmp, err := tempPath(o.Output)
	if err != nil {
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	size, err := inspect.CompactTo(ctx, f.db, tmp)
	if err != nil {
		return explainOpenError(o.File, err)
	}
	if err := checkCopy(ctx, o.env, o.common, tmp, f.all); err != nil {
		return fmt.Errorf("the compacted copy of %s failed its check (nothing was written to %s): %w", o.File, o.Output, err)
	}
	if err := installFile(tmp, o.Output, o.Force); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.env.Stdout, "compacted %s (%s) to %s (%s)\n", o.File, progress.Size(f.info.Size()), o.Output, progress.Size(size))
	return err
}

// checkCopy checks that the file at path is a sound warmcache file and,
// when want is not nil, that it holds the resources of want with the same
// object counts and resourceVersions.
func checkCopy(ctx context.Context, env *Env, common *commonOptions, path string, want []inspect.ResourceInfo) error {
	c, err := openSnapshot(ctx, env, path, common.open())
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if err := inspect.CheckFile(ctx, path); err != nil {
		return err
	}
	if want == nil {
		return nil
	}
	summary := func(infos []inspect.ResourceInfo) []string {
		out := make([]string, len(infos))
		for i, info := range infos {
			out[i] = fmt.Sprintf("%s objects=%d rv=%s problem=%q", info.Identity, info.Objects, info.ResourceVersion, info.Problem)
		}
		return out
	}
	if got, exp := summary(c.all), summary(want); !slices.Equal(got, exp) {
		return errors.New("its resources differ from the original's")
	}
	return nil
}
