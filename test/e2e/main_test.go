package e2e

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/internal/democtl"
	"github.com/warmcache/warmcache/internal/kubebin"
	"github.com/warmcache/warmcache/internal/mutationtest"
)

// childEnv, set to childDemoctl, makes the test binary run democtl.Main
// with its arguments instead of the tests.
const (
	childEnv     = "WARMCACHE_E2E_CHILD"
	childDemoctl = "democtl"
)

// testTimeout bounds one test, a first build of the binaries included.
const testTimeout = 20 * time.Minute

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == childDemoctl {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := democtl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// Every informer of these tests, and the controllers they run as child
	// processes (which inherit the environment), with the mutation detector
	// on (invariant 6).
	mutationtest.Enable()
	if !isShort() {
		// Build (or find) the binaries once, up front, so that a build
		// failure fails loudly rather than inside the first test.
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		_, err := kubebin.Ensure(ctx, kubebin.Options{})
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: cannot build kube-apiserver and etcd: %v\n", err)
			os.Exit(1)
		}
	}
	// The shared apiserver stops after the last test, before goleak looks
	// for leaked goroutines.
	goleak.VerifyTestMain(shared.Wrap(m))
}

// isShort reports -short before m.Run has parsed the flags.
func isShort() bool {
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" || a == "--test.short" || a == "--test.short=true" {
			return true
		}
	}
	return false
}

// needEnv skips under -short and returns the test's context, bounded by
// testTimeout.
func needEnv(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and controller processes; runs without -short (make test)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
