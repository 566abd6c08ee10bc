// Command warmcache is the warmcache side of smallbench: the same
// controller as its clientgo, with the import of package informers and a
// factory.Factory on a cache file (README's switch), cold on a new file or
// warm on the file of an earlier run. It prints a smallbench.Report once
// synced and settled.
package main

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/benchmarks/internal/smallbench"
	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers"
)

func main() {
	smallbench.Main("warmcache", func(ctx context.Context, fl smallbench.Flags) (smallbench.Controller, error) {
		config := fl.Access.Config()
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			return smallbench.Controller{}, err
		}
		wf, err := factory.New(ctx, factory.Options{Path: fl.Cache, RESTConfig: config})
		if err != nil {
			return smallbench.Controller{}, err
		}
		f := informers.NewSharedInformerFactoryWithOptions(wf, client, 0,
			informers.WithNamespace(fl.Access.Namespace), informers.WithRESTConfig(config))
		deployments := f.Apps().V1().Deployments()
		deployments.Informer()
		list := func() (int, error) {
			l, err := deployments.Lister().List(labels.Everything())
			return len(l), err
		}
		return smallbench.Controller{Factory: f, List: list, Stop: f.Close}, nil
	})
}
