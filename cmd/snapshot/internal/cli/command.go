package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// command is what the options of every command hold: the run's Env and
// the root command's persistent flags.
type command struct {
	env    *Env
	common *commonOptions
}

// fileCommand is the options of a command whose first argument is the
// cache file it reads.
type fileCommand struct {
	command
	// File is the cache file, the first argument.
	File string
}

func (c command) file() fileCommand { return fileCommand{command: c} }

// Complete takes File from the first argument; a command with more
// arguments has a Complete of its own.
func (o *fileCommand) Complete(_ *cobra.Command, args []string) error {
	o.File = args[0]
	return nil
}

// open opens File read-only with the options of the persistent flags.
func (o *fileCommand) open(ctx context.Context) (*snapshotFile, error) {
	return openSnapshot(ctx, o.env, o.File, o.common.open())
}

// outputFile is the flags of a command that writes a file: --output, the
// file, and --force, which lets it replace one that exists.
type outputFile struct {
	Output string
	Force  bool
}

func (o *outputFile) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Output, "output", "", "the file to write (required)")
	fs.BoolVar(&o.Force, "force", false, "replace OUT if it exists")
}

// validate reports a missing --output before any work.
func (o *outputFile) validate() error {
	if o.Output == "" {
		return usageErrorf("--output is required: the file to write")
	}
	return nil
}

// runner is an options struct of one command.
type runner interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE runs o's Complete, Validate and Run.
func runE(o runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := swappedFile(cmd, args); err != nil {
			return err
		}
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
