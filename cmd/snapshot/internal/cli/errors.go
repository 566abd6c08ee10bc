package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/warmcache/warmcache/store/bolt"
)

// Exit codes of the snapshot command. They are part of its interface:
// scripts may rely on them.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: any failure without a code of its own (I/O errors,
	// network errors, an output file that exists).
	ExitError = 1
	// ExitUsage: the command line is wrong: unknown command or flag, wrong
	// number of arguments, a bad selector, an unknown output format, a
	// directory given as FILE.
	ExitUsage = 2
	// ExitNotFound: the file, the resource, the object or the index asked
	// for does not exist.
	ExitNotFound = 3
	// ExitLocked: the file is locked by a running process (a controller
	// has it open for writing); read it with `snapshot backup` instead.
	ExitLocked = 4
	// ExitCorrupt: the file is not a readable warmcache file (empty,
	// truncated, garbage, a bbolt file of another program, left unflushed
	// across a restart of the machine) or was written by a newer
	// warmcache, or objects in it could not be read (list, get and export
	// then print every object they could read, and the keys of the others
	// on stderr).
	ExitCorrupt = 5
	// ExitProblems: verify found inconsistencies.
	ExitProblems = 6
	// ExitDifferent: diff --exit-code found differences.
	ExitDifferent = 7
	// ExitInterrupted: the command was interrupted (Ctrl-C, SIGTERM), as
	// a shell reports a command killed by SIGINT (128+2).
	ExitInterrupted = 130
)

// exitCodesHelp documents the exit codes in --help.
const exitCodesHelp = `Exit codes:
    0  success
    1  general error (I/O, network, output file exists)
    2  usage error (bad command line, selector or output format; FILE is a directory)
    3  not found (file, resource, object or index)
    4  file locked by a running process: use 'snapshot backup' to read its cache
    5  not a readable warmcache file (empty, truncated, garbage, foreign, unflushed), written by a newer warmcache,
       or damaged: list, get and export print every object they can read, then the keys they could not
    6  verify found problems
    7  diff --exit-code found differences
  130  interrupted (Ctrl-C)`

// Sentinel errors of the commands; ExitCode maps them (and the errors of
// store/bolt) to exit codes.
var (
	// ErrUsage marks a command line that cannot work.
	ErrUsage = errors.New("usage error")
	// ErrNotFound marks a missing file, resource, object or index.
	ErrNotFound = errors.New("not found")
	// ErrProblems is returned by verify when it found problems.
	ErrProblems = errors.New("verify found problems")
	// ErrDifferent is returned by diff --exit-code when the files differ.
	ErrDifferent = errors.New("files differ")
	// ErrExists is returned when an output file exists and --force was
	// not given.
	ErrExists = errors.New("output file exists")
)

// ExitCode returns the exit code for the error a command returned.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrProblems):
		return ExitProblems
	case errors.Is(err, ErrDifferent):
		return ExitDifferent
	case errors.Is(err, bolt.ErrLocked):
		return ExitLocked
	case errors.Is(err, bolt.ErrCorrupt):
		return ExitCorrupt
	case errors.Is(err, ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, bolt.ErrResourceNotFound):
		return ExitNotFound
	}
	return ExitError
}

// hinted is an error with advice on what to do about it.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// withHint attaches advice to err; printError prints it on its own line.
func withHint(err error, format string, args ...any) error {
	return &hinted{err: err, hint: fmt.Sprintf(format, args...)}
}

// marked is an error that also matches a sentinel, without the sentinel's
// text in its message.
type marked struct {
	err      error
	sentinel error
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.sentinel} }

// mark returns the error fmt.Errorf(format, args...) makes, matching
// sentinel for errors.Is.
func mark(sentinel error, format string, args ...any) error {
	return &marked{err: fmt.Errorf(format, args...), sentinel: sentinel}
}

// usageErrorf returns an error matching ErrUsage.
func usageErrorf(format string, args ...any) error { return mark(ErrUsage, format, args...) }

// printError writes err and its hints to w, as kubectl does ("error: ...").
func printError(w io.Writer, err error, commandPath string) {
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	fmt.Fprintf(w, "error: %s\n", msg)
	var h *hinted
	for e := err; errors.As(e, &h); e = h.err {
		fmt.Fprintf(w, "%s\n", h.hint)
	}
	if errors.Is(err, ErrUsage) && commandPath != "" {
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", commandPath)
	}
}
