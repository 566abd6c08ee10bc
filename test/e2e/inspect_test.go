package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// inspectPods is the size of the inspection test: their YAML (megabytes)
// is far more than a pipe holds, so a `snapshot list -o yaml` whose output
// is not read blocks in the middle of the list.
const inspectPods = 300

// TestInspectionDoesNotBlockController runs the real snapshot binary's
// `list -o yaml` on a controller's file and keeps it in the middle of its
// output (its stdout is not read, so it blocks holding the file open),
// then starts the controller on the same file: it must start warm and
// sync while the inspection still runs, and the inspection, let go, must
// print the file as it was when it started, complete, whatever the
// controller wrote meanwhile.
func TestInspectionDoesNotBlockController(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "inspect")
	c.createPods(ctx, t, ns, 0, inspectPods)
	file := filepath.Join(t.TempDir(), "cache.db")
	opts := childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns}
	first := startChild(t, opts)
	first.waitSynced(ctx)
	first.stop()
	before := c.listPods(ctx, t, ns)

	bin := buildSnapshot(ctx, t)
	cli := exec.CommandContext(ctx, bin, "list", file, "pods", "-A", "-o", "yaml")
	var stderr bytes.Buffer
	cli.Stderr = &stderr
	pipe, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Process.Kill() })
	out := bufio.NewReader(pipe)
	// Its first line: the file is open and being listed.
	head, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("snapshot list: %v; stderr: %s", err, stderr.String())
	}

	// The server changes, then the controller starts on the file the
	// inspection holds.
	c.change(ctx, t, ns, before, 100000, inspectPods/30, inspectPods/30, inspectPods/30)
	after := c.listPods(ctx, t, ns)
	start := time.Now()
	second := startChild(t, opts)
	if synced := second.waitSynced(ctx); !synced.WarmStart {
		t.Error("the controller started cold beside the inspection")
	}
	t.Logf("controller synced %v after its start, beside a running snapshot list", time.Since(start).Round(time.Millisecond))
	second.waitConverged(ctx, after)
	if !running(t, cli.Process.Pid) {
		t.Fatal("snapshot list ended before the controller synced: it was not running beside it")
	}

	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Wait(); err != nil {
		t.Fatalf("snapshot list: %v; stderr: %s", err, stderr.String())
	}
	listed := listedPods(t, append([]byte(head), rest...))
	if d := listed.diff(before); d != "" {
		t.Errorf("snapshot list printed another state than the file's when it started: %s", d)
	}

	second.stop()
	if d := readCache(ctx, t, file, podsIdentity(ns)).items.diff(after); d != "" {
		t.Errorf("the file after the controller: %s", d)
	}
}

// buildSnapshot builds the snapshot command into a temporary directory.
func buildSnapshot(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "snapshot")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/warmcache/warmcache/cmd/snapshot")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/snapshot: %v\n%s", err, out)
	}
	return bin
}

// running reports whether the process pid is running (not exited, not a
// zombie waiting to be reaped).
func running(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && !strings.HasPrefix(string(b[i+1:]), " Z") && !strings.HasPrefix(string(b[i+1:]), " X")
}

// listedPods parses `snapshot list -o yaml` output into keys and
// resourceVersions.
func listedPods(t *testing.T, out []byte) state {
	t.Helper()
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Namespace       string `json:"namespace"`
				Name            string `json:"name"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := yaml.Unmarshal(out, &list); err != nil {
		t.Fatalf("snapshot list -o yaml printed unreadable YAML: %v", err)
	}
	if list.Kind != "List" {
		t.Fatalf("snapshot list -o yaml printed kind %q, want List", list.Kind)
	}
	s := state{}
	for _, it := range list.Items {
		s[it.Metadata.Namespace+"/"+it.Metadata.Name] = it.Metadata.ResourceVersion
	}
	return s
}
