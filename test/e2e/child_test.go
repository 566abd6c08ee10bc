package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/internal/democtl"
)

// event is one line of the controller's event log.
type event = democtl.Event

// child is one run of the controller (democtl) in a child process (the test
// binary re-executed, see TestMain).
type child struct {
	*demo.Process
	t         *testing.T
	statsFile string
	logFile   string
}

// childOptions configures startChild.
type childOptions struct {
	kubeconfig, cacheFile, namespace string
}

// startChild starts the controller; the test's cleanup kills it if it is
// still running.
func startChild(t *testing.T, o childOptions) *child {
	t.Helper()
	dir := t.TempDir()
	c := &child{t: t, statsFile: filepath.Join(dir, "stats.json"), logFile: filepath.Join(dir, "stderr.log")}
	args := []string{"--kubeconfig", o.kubeconfig, "--stats-file", c.statsFile, "--event-log", "-", "-v", "2"}
	if o.cacheFile != "" {
		args = append(args, "--cache-file", o.cacheFile)
	}
	if o.namespace != "" {
		args = append(args, "--namespace", o.namespace)
	}
	p, err := demo.StartProcess(demo.ProcessOptions{
		Command:     os.Args[0],
		Args:        args,
		Env:         []string{childEnv + "=" + childDemoctl},
		LogFile:     c.logFile,
		SysProcAttr: childSysProcAttr(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Process = p
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("controller log (%s):\n%s", c.logFile, tail(c.logFile, 4096))
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
	if err := c.WaitFor(ctx, pred); err != nil {
		c.t.Fatalf("waiting for %s: %v; the controller's log:\n%s", what, err, tail(c.logFile, 4096))
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

// waitConverged waits until the controller has synced and its handler's
// view (every event so far folded into a map) equals want. Handlers are
// notified after the store is written, so the store holds want too.
func (c *child) waitConverged(ctx context.Context, want state) {
	c.t.Helper()
	c.waitFor(ctx, fmt.Sprintf("the handler to see the server's %d objects", len(want)), demo.Converged(want))
}

// stop sends SIGTERM, waits for a clean exit and returns the stats and the
// events.
func (c *child) stop() (democtl.Stats, []event) {
	c.t.Helper()
	if err := c.Stop(); err != nil {
		c.t.Fatalf("the controller failed: %v; log:\n%s", err, tail(c.logFile, 4096))
	}
	st, err := democtl.ReadStats(c.statsFile)
	if err != nil {
		c.t.Fatal(err)
	}
	return st, c.Events()
}

// log returns the controller's stderr so far.
func (c *child) log() string {
	b, err := os.ReadFile(c.logFile)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
