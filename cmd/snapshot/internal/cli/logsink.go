package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// diagSink is the logr sink given to store/bolt: it prints errors to the
// diagnostics stream as warnings and counts them, so that a command can
// tell when a read without an error result (ListIndexFuncValues) failed.
// Info lines are dropped: a read-only inspection has nothing to say there.
//
// The store's messages describe what a controller's store does about an
// error (marks the resource incomplete, relists, moves the file aside);
// the CLI changes nothing, so it prints what was found instead (see
// sinkMessages). Objects sealed with a key --key-file lacks are not
// printed: the commands report them (exit code 8).
type diagSink struct {
	shared *sinkState
	values []any
}

// sinkState is what the copies made by WithValues share.
type sinkState struct {
	// mu guards w, errors and printed.
	mu     sync.Mutex
	w      io.Writer
	errors int
	// printed holds the warnings printed so far: the store logs one
	// unreadable object at each read that meets it (a command may read a
	// resource more than once), and a repeat tells the reader nothing.
	printed map[string]bool
}

func newDiagLogger(w io.Writer) (logr.Logger, *sinkState) {
	st := &sinkState{w: w}
	return logr.New(&diagSink{shared: st}), st
}

// Errors returns the number of errors logged so far.
func (s *sinkState) Errors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors
}

func (d *diagSink) Init(logr.RuntimeInfo)        {}
func (d *diagSink) Enabled(int) bool             { return true }
func (d *diagSink) Info(int, string, ...any)     {}
func (d *diagSink) WithName(string) logr.LogSink { return d }
func (d *diagSink) WithValues(kv ...any) logr.LogSink {
	return &diagSink{shared: d.shared, values: append(append([]any(nil), d.values...), kv...)}
}

// sinkMessages are the CLI's words for the store's error messages that
// say what a writing store does next.
var sinkMessages = map[string]string{
	"Skipping an object that cannot be decoded; the resource is marked incomplete":                                  "cannot read an object",
	"The cache file is corrupt: its resources are marked incomplete and relisted, and the next open moves it aside": "the cache file is damaged",
}

// sinkMessage returns what the CLI prints for the store's message msg:
// its word from sinkMessages, else msg up to its first ";" (where the
// store's messages say what it does about the error).
func sinkMessage(msg string) string {
	if m, ok := sinkMessages[msg]; ok {
		return m
	}
	m, _, _ := strings.Cut(msg, ";")
	return m
}

func (d *diagSink) Error(err error, msg string, kv ...any) {
	if isKeyError(err) {
		d.shared.mu.Lock()
		d.shared.errors++
		d.shared.mu.Unlock()
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "warning: %s: %v", sinkMessage(msg), err)
	all := append(append([]any(nil), d.values...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		switch all[i] {
		case "file", "resource", "stack":
			continue // the command names them itself
		}
		fmt.Fprintf(&b, " %v=%q", all[i], fmt.Sprint(all[i+1]))
	}
	line := b.String()
	d.shared.mu.Lock()
	defer d.shared.mu.Unlock()
	d.shared.errors++
	if d.shared.printed[line] {
		return
	}
	if d.shared.printed == nil {
		d.shared.printed = map[string]bool{}
	}
	d.shared.printed[line] = true
	fmt.Fprintln(d.shared.w, line)
}
