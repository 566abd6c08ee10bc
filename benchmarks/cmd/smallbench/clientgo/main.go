// Command clientgo is the client-go side of smallbench: client-go's
// SharedInformerFactory with the Deployments informer of one namespace,
// as k8s.io/sample-controller builds it. It prints a smallbench.Report
// once synced and settled.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/benchmarks/internal/smallbench"
)

func main() {
	start := time.Now()
	if err := run(start); err != nil {
		fmt.Fprintln(os.Stderr, "clientgo:", err)
		os.Exit(1)
	}
}

func run(start time.Time) error {
	fl, err := smallbench.Parse(os.Args[1:])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := kubernetes.NewForConfig(fl.Access.Config())
	if err != nil {
		return err
	}
	f := clientinformers.NewSharedInformerFactoryWithOptions(client, 0, clientinformers.WithNamespace(fl.Access.Namespace))
	deployments := f.Apps().V1().Deployments()
	deployments.Informer()
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("%v did not sync", typ)
		}
	}
	sync := time.Since(start)
	list, err := deployments.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	err = smallbench.Finish(os.Stdout, len(list), sync, fl.Settle)
	cancel()
	f.Shutdown()
	return err
}
