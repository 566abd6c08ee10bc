package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/warmcache/warmcache/internal/soakctl"
)

// ErrController reports that the controller could not be started or
// stopped.
var ErrController = errors.New("soak: controller")

// stopTimeout bounds a SIGTERM'd controller's shutdown.
const stopTimeout = time.Minute

// controller is one run of the controller in a child process: its event
// log is read and checked as it comes (runCheck).
type controller struct {
	run     int
	cmd     *exec.Cmd
	started time.Time
	logPath string
	check   *runCheck
	done    chan struct{} // closed once it has exited and its log is read

	// mu guards the fields below.
	mu      sync.Mutex
	killed  bool  // by the soak
	waitErr error // valid once done is closed
}

// controllerOptions is how the soak starts a controller.
type controllerOptions struct {
	command    string   // runs soakctl.Main with the arguments
	env        []string // added to the soak's own
	kubeconfig string
	cacheFile  string
	logPath    string
}

// startController starts run number run; lo is the server's revision
// before it starts.
func startController(ctx context.Context, run int, o controllerOptions, server serverHistory, lo int64, report func(check, detail string)) (*controller, error) {
	logFile, err := os.Create(o.logPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrController, err)
	}
	cmd := exec.Command(o.command, "--kubeconfig", o.kubeconfig, "--cache-file", o.cacheFile, "-v", "2")
	cmd.Env = append(os.Environ(), o.env...)
	// Through a pipe, not the file: a lowered RLIMIT_FSIZE (the
	// disk-full fault) must not stop the controller's log.
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w: %w", ErrController, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w: %w", ErrController, err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w: start %s: %w", ErrController, o.command, err)
	}
	c := &controller{run: run, cmd: cmd, started: time.Now(), logPath: o.logPath, check: newRunCheck(run, server, lo, report), done: make(chan struct{})}
	var copied sync.WaitGroup
	copied.Go(func() {
		_, _ = io.Copy(logFile, stderr)
	})
	go func() {
		c.read(ctx, stdout, report)
		copied.Wait()
		err := cmd.Wait()
		logFile.Close()
		c.mu.Lock()
		c.waitErr = err
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// read checks the event log line by line until it ends.
func (c *controller) read(ctx context.Context, stdout io.Reader, report func(check, detail string)) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var e soakctl.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			report(CheckEventLog, fmt.Sprintf("run %d: line %q: %v", c.run, sc.Text(), err))
			continue
		}
		c.check.apply(ctx, e)
	}
	if err := sc.Err(); err != nil {
		report(CheckEventLog, fmt.Sprintf("run %d: read the event log: %v", c.run, err))
		_, _ = io.Copy(io.Discard, stdout)
	}
}

// Pid returns the process id.
func (c *controller) Pid() int { return c.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (c *controller) Exited() (bool, error) {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return true, c.waitErr
	default:
		return false, nil
	}
}

// Kill sends SIGKILL and waits until the process has exited and its log
// is read.
func (c *controller) Kill() {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	_ = c.cmd.Process.Kill()
	<-c.done
}

// Stop sends SIGTERM and waits for a clean exit; after stopTimeout it
// kills the process and fails.
func (c *controller) Stop() error {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%w: run %d: SIGTERM: %w", ErrController, c.run, err)
	}
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.Kill()
		return fmt.Errorf("%w: run %d did not stop within %v of SIGTERM", ErrController, c.run, stopTimeout)
	}
	if _, err := c.Exited(); err != nil {
		return fmt.Errorf("%w: run %d exited after SIGTERM: %w", ErrController, c.run, err)
	}
	return nil
}

// rssAnon returns the process's anonymous resident memory
// (/proc/PID/status, RssAnon): its heap and stacks, not the file's pages
// it maps.
func rssAnon(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("soak: read the status of process %d: %w", pid, err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("RssAnon:")); ok {
			f := strings.Fields(string(v))
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				break
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("soak: no RssAnon in the status of process %d", pid)
}

// tail returns about the last n bytes of the file at path, from a line.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return err.Error()
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
