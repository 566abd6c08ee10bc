// Command warmcache is the warmcache side of smallbench: the same
// controller as its clientgo, with the import of package informers and a
// factory.Factory on a cache file (README's switch), cold on a new file or
// warm on the file of an earlier run. It prints a smallbench.Report once
// synced and settled.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/benchmarks/internal/smallbench"
	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers"
)

func main() {
	start := time.Now()
	if err := run(start); err != nil {
		fmt.Fprintln(os.Stderr, "warmcache:", err)
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
	config := fl.Access.Config()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	wf, err := factory.New(ctx, factory.Options{Path: fl.Cache, RESTConfig: config})
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactoryWithOptions(wf, client, 0,
		informers.WithNamespace(fl.Access.Namespace), informers.WithRESTConfig(config))
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
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
