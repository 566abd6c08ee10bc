// Command workqueue is a pod controller in client-go's sample-controller
// style whose informer cache lives in a bbolt file, so that a restart
// resumes from it instead of listing every pod again.
//
//	go run ./examples/workqueue --kubeconfig ~/.kube/config --cache-file pods.db --stats-file stats.json
//
// It runs until SIGINT or SIGTERM, then writes its stats (time to synced,
// events delivered by type, LIST requests, bytes received, peak and steady
// heap) and exits. Run it twice on the same --cache-file to see a warm
// start. See package controller for the flags and the code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/warmcache/warmcache/examples/workqueue/controller"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := controller.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
