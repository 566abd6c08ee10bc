// Package cmdrun is the frame every benchmark program shares: its exit
// codes, its usage error and its run function.
package cmdrun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
)

// Exit codes of every benchmark program.
const (
	ExitOK    = 0 // success
	ExitFail  = 1 // a measurement failed
	ExitUsage = 2 // bad flags or arguments
)

// ErrUsage is what a program's parse returns for bad flags or arguments,
// wrapped with what was wrong; returned bare, it means the flag package
// has said so already.
var ErrUsage = errors.New("usage")

// Run runs the program called name: it parses args with parse, then calls
// measure with the options and a context an interrupt cancels. An error is
// written to stderr after the name; Run returns the exit code: ExitUsage
// for any error of parse, ExitFail for one of measure.
func Run[O any](name string, args []string, stderr io.Writer, parse func(args []string, stderr io.Writer) (O, error), measure func(ctx context.Context, o O) error) int {
	o, err := parse(args, stderr)
	if err != nil {
		if err != ErrUsage {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
		}
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := measure(ctx, o); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitFail
	}
	return ExitOK
}

// FlagSet returns the flag set of the program called name: it writes its
// usage and errors to stderr and returns them rather than exiting.
func FlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Parse parses args with fs, which takes no positional arguments: a bad
// flag is ErrUsage bare (fs has written why), an argument ErrUsage wrapped.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	return nil
}

// LockedWriter returns a writer that serialises the writes to w, for the
// progress lines of goroutines that share stderr.
func LockedWriter(w io.Writer) io.Writer { return &lockedWriter{w: w} }

type lockedWriter struct {
	mu sync.Mutex // guards w's writes
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
