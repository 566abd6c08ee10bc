package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
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

// minParallel is the least -test.parallel the tests run with unless the
// command line sets it: they mostly wait (for a controller to sync, for a
// kill moment, for the apiserver), so on two cores four at a time finish
// much sooner than GOMAXPROCS (two) at a time.
const minParallel = 4

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
	flag.Parse()
	raiseParallel()
	if !testing.Short() {
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

// raiseParallel sets -test.parallel to minParallel when the command line
// does not set it and its default (GOMAXPROCS) is lower.
func raiseParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); !set && f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n < minParallel {
			_ = f.Value.Set(strconv.Itoa(minParallel))
		}
	}
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
