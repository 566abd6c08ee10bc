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
type diagSink struct {
	shared *sinkState
	values []any
}

// sinkState is what the copies made by WithValues share.
type sinkState struct {
	// mu guards w and errors.
	mu     sync.Mutex
	w      io.Writer
	errors int
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

func (d *diagSink) Error(err error, msg string, kv ...any) {
	var b strings.Builder
	fmt.Fprintf(&b, "warning: %s: %v", msg, err)
	all := append(append([]any(nil), d.values...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		switch all[i] {
		case "file", "resource", "stack":
			continue // the command names them itself
		}
		fmt.Fprintf(&b, " %v=%q", all[i], fmt.Sprint(all[i+1]))
	}
	d.shared.mu.Lock()
	defer d.shared.mu.Unlock()
	d.shared.errors++
	fmt.Fprintln(d.shared.w, b.String())
}
