package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/warmcache/warmcache/examples/workqueue/controller"
)

// event is one line of the workqueue example's event log.
type event = controller.Event

// child is one run of the workqueue example in a child process (the test
// binary re-executed, see TestMain).
type child struct {
	t         *testing.T
	cmd       *exec.Cmd
	statsFile string
	logFile   string

	events *eventSink    // closed with the process's exit status
	done   chan struct{} // closed once the process has exited and stdout is read
}

// childOptions configures startChild.
type childOptions struct {
	kubeconfig, cacheFile, namespace string
}

// startChild starts the example; the test's cleanup kills it if it is
// still running.
func startChild(t *testing.T, o childOptions) *child {
	t.Helper()
	dir := t.TempDir()
	c := &child{
		t:         t,
		statsFile: filepath.Join(dir, "stats.json"),
		logFile:   filepath.Join(dir, "stderr.log"),
		events:    newEventSink(),
		done:      make(chan struct{}),
	}
	args := []string{"--kubeconfig", o.kubeconfig, "--stats-file", c.statsFile, "--event-log", "-", "-v", "2"}
	if o.cacheFile != "" {
		args = append(args, "--cache-file", o.cacheFile)
	}
	if o.namespace != "" {
		args = append(args, "--namespace", o.namespace)
	}
	c.cmd = exec.Command(os.Args[0], args...)
	c.cmd.Env = append(os.Environ(), childEnv+"="+childWorkqueue)
	c.cmd.SysProcAttr = childSysProcAttr()
	stderr, err := os.Create(c.logFile)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		stderr.Close()
		t.Fatalf("start the example controller: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var bad error
		for sc.Scan() {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				bad = fmt.Errorf("event log line %q: %w", sc.Text(), err)
				continue
			}
			c.events.add(e)
		}
		err := c.cmd.Wait()
		stderr.Close()
		c.events.close(errors.Join(err, bad, sc.Err()))
		close(c.done)
	}()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("example controller log (%s):\n%s", c.logFile, tail(c.logFile, 4096))
		}
	})
	return c
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// waitFor waits until pred holds for the events so far. It fails the test
// if the process exits first or ctx ends.
func (c *child) waitFor(ctx context.Context, what string, pred func([]event) bool) {
	c.t.Helper()
	if err := c.events.waitFor(ctx, pred); err != nil {
		c.t.Fatalf("waiting for %s: %v; the example controller's log:\n%s", what, err, tail(c.logFile, 4096))
	}
}

// waitSynced waits for the "synced" line and returns it.
func (c *child) waitSynced(ctx context.Context) event {
	c.t.Helper()
	var synced event
	c.waitFor(ctx, "the controller to sync", func(es []event) bool {
		for _, e := range es {
			if e.Type == "synced" {
				synced = e
				return true
			}
		}
		return false
	})
	return synced
}

// waitConverged waits until the handler's view (every event so far folded
// into a map) equals want. Handlers are notified after the store is
// written, so the store holds want too.
func (c *child) waitConverged(ctx context.Context, want state) {
	c.t.Helper()
	c.waitFor(ctx, fmt.Sprintf("the handler to see the server's %d objects", len(want)), func(es []event) bool {
		return fold(nil, es).diff(want) == ""
	})
}

// snapshot returns a copy of the events so far.
func (c *child) snapshot() []event { return c.events.snapshot() }

// stop sends SIGTERM, waits for a clean exit and returns the stats and the
// events.
func (c *child) stop() (controller.Stats, []event) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.t.Fatalf("signal the example controller: %v", err)
	}
	<-c.done
	if err := c.events.err(); err != nil {
		c.t.Fatalf("the example controller failed: %v; log:\n%s", err, tail(c.logFile, 4096))
	}
	st, err := controller.ReadStats(c.statsFile)
	if err != nil {
		c.t.Fatal(err)
	}
	return st, c.snapshot()
}

// kill sends SIGKILL and waits for the process to end.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// log returns the controller's stderr so far.
func (c *child) log() string {
	b, err := os.ReadFile(c.logFile)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
