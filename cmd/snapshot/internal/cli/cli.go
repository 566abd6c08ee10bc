// Package cli implements the snapshot command: inspection of warmcache's
// bbolt cache files. Package main (cmd/snapshot) calls Run; tests call it
// in-process with an Env of their own (buffers, a fixed clock).
//
// Every command follows kubectl's shape: an options struct filled from the
// command line by Complete, checked by Validate, executed by Run; data goes
// to Env.Stdout, diagnostics and progress to Env.Stderr; errors map to the
// exit codes documented on ExitCode's constants. No command writes the file
// it inspects: files are opened read-only under a shared lock, and the
// commands that write (compact, backup) write only their --output.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
)

// Env is what one run of the command talks to. The zero value of a field
// means its default.
type Env struct {
	// Stdout receives the data a command produces. Default os.Stdout.
	Stdout io.Writer
	// Stderr receives errors, warnings and progress bars. Default
	// os.Stderr.
	Stderr io.Writer
	// Now is the clock of AGE columns. Default time.Now.
	Now func() time.Time
	// Terminal reports whether w is a terminal; progress bars are drawn on
	// Stderr only when it is. Default: term.IsTerminal for an *os.File,
	// false for anything else.
	Terminal func(w io.Writer) bool
	// HTTPClient fetches backups. Default: a client whose transport gives
	// up on a server that sends no response headers within 30s.
	HTTPClient *http.Client
}

func (e Env) withDefaults() Env {
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Terminal == nil {
		e.Terminal = isTerminal
	}
	if e.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 30 * time.Second
		e.HTTPClient = &http.Client{Transport: t}
	}
	return e
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressBar returns a bar on Stderr when it is a terminal, nil (which
// draws nothing) otherwise.
func (e *Env) progressBar(label string, total int64, bytes bool) *progress.Bar {
	if !e.Terminal(e.Stderr) {
		return nil
	}
	return progress.New(e.Stderr, progress.Options{Label: label, Total: total, Bytes: bytes})
}

// Run runs the snapshot command with args (without the program name) and
// returns its exit code. It never panics and never exits the process: a
// fault reading a damaged memory-mapped file becomes an error, and any
// other panic is reported as an internal error with exit code 1.
func Run(ctx context.Context, env Env, args []string) (code int) {
	env = env.withDefaults()
	// bbolt reads the file through a memory mapping; a page it trusts too
	// much must not crash the inspection tool. Faults become panics,
	// which store/bolt recovers into ErrCorrupt.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(env.Stderr, "error: internal error: %v\n%s", r, debug.Stack())
			code = ExitError
		}
	}()
	root := newRootCommand(&env)
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !errors.Is(err, ErrDifferent) {
		path := ""
		if cmd != nil {
			path = cmd.CommandPath()
		}
		printError(env.Stderr, err, path)
	}
	return ExitCode(err)
}

// commonOptions are the flags every command has.
type commonOptions struct {
	// LockTimeout bounds the wait for a file's lock.
	LockTimeout time.Duration
	// UnsafeIgnoreState reads a file its state file says may be torn.
	UnsafeIgnoreState bool
	// KeyFile holds the keys that open sealed resources.
	KeyFile string
}

func (c *commonOptions) open() openOptions {
	return openOptions{Timeout: c.LockTimeout, UnsafeIgnoreState: c.UnsafeIgnoreState, KeyFile: c.KeyFile}
}

func newRootCommand(env *Env) *cobra.Command {
	common := &commonOptions{}
	root := &cobra.Command{
		Use:   "snapshot",
		Short: "Inspect warmcache's bbolt cache files",
		Long: `snapshot inspects the bbolt files in which warmcache informers keep their cache.

It never writes the file it inspects: files are opened read-only under a shared lock.
A file a running controller holds open for writing is locked; fetch a consistent copy
from the process with 'snapshot backup' and inspect the copy.

Data goes to standard output; errors, warnings and progress bars to standard error.

` + exitCodesHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			err := usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				err = withHint(err, "Did you mean %q?", s[0])
			}
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return listOnlyFlag(cmd, usageErrorf("%v", err)) })
	root.PersistentFlags().DurationVar(&common.LockTimeout, "lock-timeout", time.Second,
		"how long to wait for the file's lock before giving up (exit code 4); 0 tries once")
	root.PersistentFlags().BoolVar(&common.UnsafeIgnoreState, "unsafe-ignore-state", false,
		"read a file left unflushed across a restart of the machine (it may be torn: what it shows may be wrong)")
	root.PersistentFlags().StringVar(&common.KeyFile, "key-file", "",
		"file of the keys that decrypt sealed resources (Secrets): one base64 key per line, as the controller reads them; without it, or without the key that sealed them, their objects are not shown (exit code 8); their names, labels, counts and index values always are")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if common.LockTimeout < 0 {
			return usageErrorf("--lock-timeout must not be negative")
		}
		return nil
	}
	c := command{env: env, common: common}
	root.AddCommand(
		newInfoCommand(c),
		newListCommand(c),
		newGetCommand(c),
		newIndexCommand(c),
		newVerifyCommand(c),
		newExportCommand(c),
		newDiffCommand(c),
		newCompactCommand(c),
		newBackupCommand(c),
		newServeCommand(c),
	)
	// The completion scripts are bound to the output set before they are
	// created.
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	strictCompletion(root)
	return root
}

// strictCompletion makes `completion SHELL` fail for a shell cobra has no
// script for, as kubectl does (exit code 1), instead of printing help.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, s := range c.Commands() {
			shells = append(shells, s.Name())
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return withHint(fmt.Errorf("unsupported shell type %q", args[0]), "Supported shells: %s.", strings.Join(shells, ", "))
			}
			return nil
		}
		c.RunE = func(*cobra.Command, []string) error {
			return usageErrorf("shell not specified: give one of %s", strings.Join(shells, ", "))
		}
	}
}

// usageArgs makes the errors of an argument validator usage errors.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			// cobra's message counts the arguments without naming them.
			err = usageErrorf("%v", err)
			if use := strings.Fields(cmd.Use); len(args) == 1 && len(use) > 2 && use[1] == "FILE" &&
				(strings.HasPrefix(use[2], "TYPE") || strings.HasPrefix(use[2], "(TYPE") || use[2] == "RESOURCE") {
				// Printed after the usage line: what to put after FILE.
				err = withHint(err, "'snapshot info %s' lists the resources the file holds.", shellQuote(args[0]))
			}
			return withHint(err, "Usage: %s", cmd.UseLine())
		}
		return nil
	}
}

// swappedFile reports the cache file given after the resource instead of
// before it (snapshot list pods cache.db), a kubectl habit, as a usage
// error that shows the order, rather than as a missing file "pods". It
// applies to the commands whose first argument is FILE and whose second
// is not a file too (diff's FILE1 FILE2 is left to openSnapshot).
func swappedFile(cmd *cobra.Command, args []string) error {
	use := strings.Fields(cmd.Use)
	if len(use) < 3 || use[1] != "FILE" || len(args) < 2 {
		return nil
	}
	if _, err := os.Stat(args[0]); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for i, a := range args[1:] {
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
			fixed := []string{cmd.CommandPath(), shellQuote(a)}
			for j, b := range args {
				if j != i+1 {
					fixed = append(fixed, shellQuote(b))
				}
			}
			flags := ""
			if cmd.Flags().NFlag() > 0 {
				flags = " (with the same flags)"
			}
			return withHint(usageErrorf("file %s does not exist, and %s is a file: the file comes first", args[0], a),
				"Did you mean '%s'%s?\nUsage: %s", strings.Join(fixed, " "), flags, cmd.UseLine())
		}
	}
	return nil
}

// listOnlyFlag adds to the error of a flag unknown to get a hint when
// list has that flag: kubectl get's -A, -l, --field-selector and --sort-by
// select objects, which snapshot does with list (get looks names up).
func listOnlyFlag(cmd *cobra.Command, err error) error {
	if cmd.Name() != "get" || !cmd.HasParent() {
		return err
	}
	var list *cobra.Command
	for _, c := range cmd.Parent().Commands() {
		if c.Name() == "list" {
			list = c
		}
	}
	if list == nil {
		return err
	}
	msg := err.Error()
	name := ""
	if long, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if f := list.Flags().Lookup(long); f != nil {
			name = "--" + f.Name
		}
	} else if rest, ok := strings.CutPrefix(msg, "unknown shorthand flag: '"); ok && len(rest) > 1 && rest[1] == '\'' {
		if f := list.Flags().ShorthandLookup(rest[:1]); f != nil {
			name = "-" + f.Shorthand + " (--" + f.Name + ")"
		}
	}
	if name == "" {
		return err
	}
	return withHint(err, "%s is list's: get looks objects up by name, list selects and sorts them (%s).", name, list.UseLine())
}

// closeInto closes c and records its error in *err if there is none yet.
func closeInto(c io.Closer, err *error) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}
