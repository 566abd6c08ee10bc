package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/warmcache/warmcache/internal/democtl"
)

// ErrExited is returned by EventLog.WaitFor when the log is closed (the
// process exited) before the condition holds.
var ErrExited = errors.New("demo: the controller process exited")

// ProcessOptions configures StartProcess.
type ProcessOptions struct {
	// Command and Args run the demo controller: internal/democtl's
	// command, or any program that runs democtl.Main with Args (the end-to-end tests
	// re-execute their own binary). Command is required.
	Command string
	Args    []string
	// Env is added to the environment the process inherits. Default: none.
	Env []string
	// LogFile receives the process's stderr. Required.
	LogFile string
	// SysProcAttr, when set, is the process's (for example Pdeathsig).
	// Default: none.
	SysProcAttr *syscall.SysProcAttr
}

// EventLog collects democtl.Events (from a process's event log or an
// in-process handler) and lets a caller wait for a condition on them. The
// zero value is not usable; use NewEventLog. Methods are safe for
// concurrent use.
type EventLog struct {
	// mu guards the fields below.
	mu      sync.Mutex
	events  []democtl.Event
	changed chan struct{} // closed and replaced on every change
	closed  bool
	err     error // why it was closed; nil for a clean end
}

// NewEventLog returns an empty, open log.
func NewEventLog() *EventLog { return &EventLog{changed: make(chan struct{})} }

// Add appends an event.
func (l *EventLog) Add(e democtl.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	l.notifyLocked()
}

// Close records that no more events come, and why (nil: a clean end).
func (l *EventLog) Close(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed, l.err = true, err
	l.notifyLocked()
}

func (l *EventLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Err returns the error the log was closed with.
func (l *EventLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Events returns a copy of the events so far.
func (l *EventLog) Events() []democtl.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]democtl.Event(nil), l.events...)
}

// WaitFor waits until pred holds for the events so far. It returns an
// error wrapping ErrExited if the log is closed first, or ctx's cause.
// pred is called with the lock held: it must not call the log.
func (l *EventLog) WaitFor(ctx context.Context, pred func([]democtl.Event) bool) error {
	for {
		l.mu.Lock()
		ok := pred(l.events)
		closed, err, ch := l.closed, l.err, l.changed
		l.mu.Unlock()
		switch {
		case ok:
			return nil
		case closed:
			return fmt.Errorf("%w (%v)", ErrExited, err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Process is a running demo controller started with "--event-log -":
// its events are read from stdout into its EventLog as they come; the log
// is closed with the exit status when the process ends. Methods are safe
// for concurrent use.
type Process struct {
	*EventLog
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and stdout is read
}

// StartProcess starts the process; Args should include "--event-log -"
// for WaitFor and Events to see anything. The caller must end it (Stop or
// Kill).
func StartProcess(opts ProcessOptions) (*Process, error) {
	if opts.Command == "" || opts.LogFile == "" {
		return nil, fmt.Errorf("%w: start process: Command and LogFile are required", ErrInvalidOptions)
	}
	logFile, err := os.Create(opts.LogFile)
	if err != nil {
		return nil, fmt.Errorf("%w: start %s: %w", ErrController, opts.Command, err)
	}
	cmd := exec.Command(opts.Command, opts.Args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stderr = logFile
	cmd.SysProcAttr = opts.SysProcAttr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w: start %s: %w", ErrController, opts.Command, err)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w: start %s: %w", ErrController, opts.Command, err)
	}
	p := &Process{EventLog: NewEventLog(), cmd: cmd, done: make(chan struct{})}
	go p.read(stdout, logFile)
	return p, nil
}

func (p *Process) read(stdout io.Reader, logFile *os.File) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var bad error
	for sc.Scan() {
		var e democtl.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			if bad == nil {
				bad = fmt.Errorf("%w: event log line %q: %w", ErrController, sc.Text(), err)
			}
			continue
		}
		p.Add(e)
	}
	err := p.cmd.Wait()
	logFile.Close()
	p.Close(errors.Join(err, bad, sc.Err()))
	close(p.done)
}

// Stop sends SIGTERM and waits for the process to exit; it returns the
// exit error, if any (the controller writes its stats on SIGTERM).
func (p *Process) Stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%w: signal: %w", ErrController, err)
	}
	<-p.done
	if err := p.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrController, err)
	}
	return nil
}

// Kill sends SIGKILL and waits for the process to end. It is safe to call
// on a process that has exited.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Fold applies events to a copy of state (key -> resourceVersion), as a
// handler keeping its own map would: adds and updates set the key's
// resourceVersion, deletes remove it.
func Fold(state map[string]string, events []democtl.Event) map[string]string {
	out := make(map[string]string, len(state))
	for k, v := range state {
		out[k] = v
	}
	for _, e := range events {
		switch e.Type {
		case "add", "update":
			out[e.Key] = e.ResourceVersion
		case "delete":
			delete(out, e.Key)
		}
	}
	return out
}

// Converged returns a predicate for WaitFor that holds once the events,
// folded from an empty map, equal want (key -> resourceVersion) and a
// "synced" line was seen. It folds incrementally: each call looks only at
// the events it has not seen, so waiting on a long log costs linear time.
// The predicate must be used with one log only.
func Converged(want map[string]string) func([]democtl.Event) bool {
	view := map[string]string{}
	seen := 0
	synced := false
	differ := len(want) // keys where view and want disagree
	set := func(key, rv string, present bool) {
		before := view[key]
		_, had := view[key]
		w, wanted := want[key]
		wasOK := had == wanted && (!had || before == w)
		if present {
			view[key] = rv
		} else {
			delete(view, key)
		}
		isOK := present == wanted && (!present || rv == w)
		switch {
		case wasOK && !isOK:
			differ++
		case !wasOK && isOK:
			differ--
		}
	}
	return func(es []democtl.Event) bool {
		for _, e := range es[seen:] {
			switch e.Type {
			case "synced":
				synced = true
			case "add", "update":
				set(e.Key, e.ResourceVersion, true)
			case "delete":
				set(e.Key, "", false)
			}
		}
		seen = len(es)
		return synced && differ == 0
	}
}
