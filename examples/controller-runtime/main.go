// Command controller-runtime is a controller-runtime manager whose cache
// is warmcache's (one option: NewCache: crcache.NewCache(...)), so that
// its informers keep their objects in a bbolt file, a restart resumes from
// it instead of listing again, and the client's List decodes only what it
// selects.
//
//	cd examples/controller-runtime
//	go run . --kubeconfig ~/.kube/config --cache-file cm.db --namespace default
//
// The controller reconciles the ConfigMaps labelled
// warmcache-example=true: it records a hash of each one's data in the
// annotation warmcache.example/data-hash. It runs until SIGINT or SIGTERM.
//
// The example is its own Go module, so that warmcache's module does not
// depend on controller-runtime; its go.work builds it against warmcache's
// and crcache's modules of this checkout (RELEASING.md). Its
// test (go test in this directory) runs the manager against a real
// kube-apiserver, restarts it, and checks that the restart does not relist;
// warmcache's end-to-end suite (test/e2e, TestControllerRuntime) runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.cacheFile, "cache-file", "", "bbolt file that keeps the informers' cache across restarts (required)")
	flag.StringVar(&cfg.namespace, "namespace", "", "watch only this namespace (default: all)")
	klog.InitFlags(nil)
	flag.Parse() // --kubeconfig is controller-runtime's flag
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(klog.NewKlogr())
	rc, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "controller-runtime example: %v\n", err)
		os.Exit(2)
	}
	cfg.rest = rc
	if _, err := run(klog.NewContext(ctx, klog.NewKlogr()), cfg); err != nil {
		fmt.Fprintf(os.Stderr, "controller-runtime example: %v\n", err)
		os.Exit(1)
	}
}
