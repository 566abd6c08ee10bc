package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestControllerRuntime runs the controller-runtime example's tests:
// the example is its own module (warmcache's module does not depend on
// controller-runtime), so its tests run with `go test` in its directory.
// They start a real apiserver, run a manager whose cache is warmcache's
// (crcache.NewCache), restart it and check that it
// resumed warm (no LIST, no WatchList of its resource) and reconciled
// exactly what changed. The first run compiles controller-runtime
// (minutes on two cores).
func TestControllerRuntime(t *testing.T) {
	t.Parallel() // a go test process of its own
	ctx := needEnv(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"test", "-count=1"}
	if raceEnabled {
		args = append(args, "-race")
	}
	if testing.Verbose() {
		args = append(args, "-v")
	}
	args = append(args, "./...")
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = filepath.Join("..", "..", "examples", "controller-runtime")
	out, err := cmd.CombinedOutput()
	if err != nil {
		hint := ""
		if bytes.Contains(out, []byte("go mod tidy")) || bytes.Contains(out, []byte("missing go.sum entry")) {
			// The example's module replaces warmcache with this
			// checkout: a dependency added here must reach its go.mod.
			hint = "\n(warmcache's go.mod changed: run `go mod tidy` in " + cmd.Dir + ")"
		}
		t.Fatalf("go %v in %s: %v%s\n%s", args, cmd.Dir, err, hint, out)
	}
	t.Logf("go %v in %s:\n%s", args, cmd.Dir, lastLines(out, 20))
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) string {
	end := len(b)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' && i != len(b)-1 {
			n--
			if n == 0 {
				return string(b[i+1 : end])
			}
		}
	}
	return string(b[:end])
}
