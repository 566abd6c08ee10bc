package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlags(t *testing.T) {
	cmdtest.Run(t, run, []cmdtest.Case{
		{Name: "descending numbers", Args: []string{"-n", "10,5"}, Code: cmdrun.ExitUsage, StderrIn: "ascending"},
		{Name: "zero runs", Args: []string{"-runs", "0"}, Code: cmdrun.ExitUsage, StderrIn: "-runs"},
		{Name: "extra arguments", Args: []string{"extra"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
	})
}

// A small run against a real kube-apiserver: both controllers list every
// Deployment, cold and warm.
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two controllers and starts kube-apiserver; runs without -short (make test)")
	}
	cmdtest.Run(t, run, []cmdtest.Case{{
		Name: "20 Deployments", Args: []string{"-n", "20", "-runs", "1", "-settle", "0s", "-dir", t.TempDir()},
		Code:   cmdrun.ExitOK,
		Stdout: []string{"steady RSS MiB", "client-go", "warmcache cold", "warmcache warm", "binaries (go build)"},
	}})
}

// The warmcache controller's binary is at most 10 MB larger than
// client-go's: package informers looks no method up by name (which keeps
// every exported method of every type the linker reaches; it doubled the
// binary).
func TestControllerBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("links two controllers; runs without -short (make test)")
	}
	dir := t.TempDir()
	size := func(name string) int64 {
		out := filepath.Join(dir, name)
		if msg, err := exec.Command("go", "build", "-o", out, controller+name).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, msg)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	cg, wc := size("clientgo"), size("warmcache")
	if wc > cg+10e6 {
		t.Fatalf("the warmcache controller is %.1f MB, client-go's %.1f MB: more than 10 MB larger", float64(wc)/1e6, float64(cg)/1e6)
	}
	t.Logf("client-go %.1f MB, warmcache %.1f MB", float64(cg)/1e6, float64(wc)/1e6)
}
