package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMachineRestartAfterKill: the controller writes its file without a flush
// per commit (bolt.SyncOnClose, the default). Killed with SIGKILL, it
// restarts warm: the kernel kept every write. Killed and followed by a
// restart of the machine (simulated: the boot id its state file records is
// no longer the kernel's), its file may be torn, so the next start moves
// it aside and starts cold with a log line saying why.
func TestMachineRestartAfterKill(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "reboot")
	c.createPods(ctx, t, ns, 0, 300)
	file := filepath.Join(t.TempDir(), "cache.db")
	opts := childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns}

	first := startChild(t, opts)
	first.waitSynced(ctx)
	first.Kill()

	// Same boot: warm.
	second := startChild(t, opts)
	if ev := second.waitSynced(ctx); !ev.WarmStart {
		t.Fatal("after a SIGKILL in the same boot of the machine the controller started cold")
	}
	second.Kill()

	// The machine restarted: the recorded boot id is not the kernel's.
	var st map[string]any
	b, err := os.ReadFile(file + ".state")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil || st["state"] != "open" {
		t.Fatalf("state file of a killed writer = %s (%v), want open", b, err)
	}
	st["boot"] = "a boot of the machine before it restarted"
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file+".state", b)

	third := startChild(t, opts)
	synced := third.waitSynced(ctx)
	stats, events := third.stop()
	if synced.WarmStart || stats.WarmStart {
		t.Error("started warm from a file left unflushed across a restart of the machine")
	}
	initial, _, err := split(events)
	if err != nil {
		t.Fatal(err)
	}
	want := c.listPods(ctx, t, ns)
	if d := initial.diff(want); d != "" {
		t.Errorf("cold start after the restart: initial adds differ from a LIST: %s", d)
	}
	moved, err := filepath.Glob(file + ".corrupt-*")
	if err != nil || len(moved) != 2 || !strings.HasSuffix(moved[1], ".state") {
		t.Fatalf("moved-aside files %q (%v), want the file and its state file", moved, err)
	}
	if log := third.log(); !strings.Contains(log, "not flushed before the machine restarted") || !strings.Contains(log, moved[0]) {
		t.Errorf("no log line says why the file was moved aside; log:\n%s", tail(third.logFile, 2048))
	}
	// The clean stop closed the new file: trusted whatever the boot.
	if b, err := os.ReadFile(file + ".state"); err != nil || !strings.Contains(string(b), `"closed"`) {
		t.Errorf("state file after a clean stop = %s (%v), want closed", b, err)
	}
}
