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
	// for does not exist. kubectl exits 1 for a missing object as for any
	// other error; snapshot keeps a code of its own so that a script can
	// tell "not there" from "could not look" (an I/O error, a locked
	// file), and prints kubectl's message (Error from ... (NotFound)).
	ExitNotFound = 3
	// ExitLocked: the file is locked by a running process (a controller
	// has it open for writing); read it with `snapshot backup` instead.
	ExitLocked = 4
	// ExitCorrupt: the file is not a readable warmcache file (empty,
	// truncated, garbage, a bbolt file of another program, left unflushed
	// across a restart of the machine) or was written by a newer
	// warmcache, or objects in it could not be read (list, get and export
	// then print every object they could read, and the keys of the others
	// on stderr), or index entries name keys without an object (index
	// prints the others, then those on stderr).
	ExitCorrupt = 5
	// ExitProblems: verify found inconsistencies.
	ExitProblems = 6
	// ExitDifferent: diff --exit-code found differences.
	ExitDifferent = 7
	// ExitKey: objects of a sealed (encrypted) resource were asked for
	// and cannot be decrypted: no --key-file was given, or it does not
	// hold the key that sealed them. The file is not damaged. list and
	// export print every object they can decrypt, then the keys of the
	// others on stderr; verify checks everything but their payloads.
	ExitKey = 8
	// ExitInterrupted: the command was interrupted (Ctrl-C, SIGTERM), as
	// a shell reports a command killed by SIGINT (128+2).
	ExitInterrupted = 130
)

// exitCodesHelp documents the exit codes in --help.
const exitCodesHelp = `Exit codes:
    0  success
    1  general error (I/O, network, output file exists)
    2  usage error (bad command line, selector or output format; FILE is a directory)
    3  not found (file, resource, object or index); a missing object is reported as kubectl does
       (Error from cache file (NotFound): ...), with a code of its own where kubectl exits 1
    4  file locked by a running process: use 'snapshot backup' to read its cache
    5  not a readable warmcache file (empty, truncated, garbage, foreign, unflushed), written by a newer warmcache,
       or damaged: list, get and export print every object they can read, then the keys they could not;
       index prints the keys whose object exists, then the others
    6  verify found problems
    7  diff --exit-code found differences
    8  sealed objects cannot be decrypted: no --key-file, or it lacks the key that sealed them
       (the file is not damaged; names, labels and index values show without a key)
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
	// ErrKey marks objects of a sealed resource that cannot be decrypted
	// with the keys given (none, or not the one that sealed them).
	ErrKey = errors.New("cannot decrypt")
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
	// Before ErrCorrupt: an object the store cannot decrypt is reported
	// wrapping both.
	case errors.Is(err, ErrKey):
		return ExitKey
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

// notFoundSource is where printError says a missing object was looked
// for, in the place of kubectl's "server".
const notFoundSource = "cache file"

// printError writes err and its hints to w, as kubectl does ("error: ...";
// a missing object as "Error from cache file (NotFound): pods "x" not
// found", kubectl's line with the file in the place of the server).
func printError(w io.Writer, err error, commandPath string) {
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	var nf *objectNotFound
	if errors.As(err, &nf) {
		fmt.Fprintf(w, "Error from %s (NotFound): %s\n", notFoundSource, nf.Error())
	} else {
		fmt.Fprintf(w, "error: %s\n", msg)
	}
	var h *hinted
	for e := err; errors.As(e, &h); e = h.err {
		fmt.Fprintf(w, "%s\n", h.hint)
	}
	if errors.Is(err, ErrUsage) && commandPath != "" {
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", commandPath)
	}
}
