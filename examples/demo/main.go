// Command demo is `make demo`: it shows what warmcache changes for a
// controller that restarts. It builds (or reuses) kube-apiserver and etcd,
// starts them on loopback, creates 20,000 realistic pods, runs the
// workqueue controller (internal/democtl: the pattern of examples/workqueue,
// instrumented) cold on an empty cache file, stops it,
// changes 1% of the pods, runs it warm on the same file, and prints a
// side-by-side table (time to synced, LIST requests counted by the
// apiserver, bytes received, peak and steady heap, events delivered) and
// the snapshot CLI's view of the file. Progress goes to stderr. Everything
// it starts is stopped and its temporary directory removed at the end,
// also on Ctrl-C.
//
// Run it from the repository root:
//
//	go run ./examples/demo [-pods N] [-change 0.01] [-keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/warmcache/warmcache/internal/demo"
)

func main() {
	var o demo.Options
	flag.IntVar(&o.Pods, "pods", demo.DefaultPods, "pods to create")
	flag.Float64Var(&o.ChangeFraction, "change", demo.DefaultChangeFraction, "fraction of the pods changed between the runs")
	flag.IntVar(&o.Workers, "workers", demo.DefaultWorkers, "concurrent requests when creating and changing pods")
	flag.StringVar(&o.Controller, "controller", "", "a built internal/democtl/cmd/democtl binary (default: go build it)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the working directory (cache file, logs) instead of removing it")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := demo.Run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}
