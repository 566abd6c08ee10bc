// Command democtl runs the instrumented pod controller of package democtl
// until SIGINT or SIGTERM, then writes its stats and exits. `make demo`
// builds and runs it:
//
//	go run ./internal/democtl/cmd/democtl --kubeconfig KUBECONFIG --cache-file pods.db --stats-file stats.json --event-log -
//
// See democtl.Main for the flags and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/warmcache/warmcache/internal/democtl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := democtl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
