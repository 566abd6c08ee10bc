// Command clientgo is the client-go side of smallbench: client-go's
// SharedInformerFactory with the Deployments informer of one namespace,
// as k8s.io/sample-controller builds it. It prints a smallbench.Report
// once synced and settled.
package main

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/benchmarks/internal/smallbench"
)

func main() {
	smallbench.Main("clientgo", func(_ context.Context, fl smallbench.Flags) (smallbench.Controller, error) {
		client, err := kubernetes.NewForConfig(fl.Access.Config())
		if err != nil {
			return smallbench.Controller{}, err
		}
		f := clientinformers.NewSharedInformerFactoryWithOptions(client, 0, clientinformers.WithNamespace(fl.Access.Namespace))
		deployments := f.Apps().V1().Deployments()
		deployments.Informer()
		list := func() (int, error) {
			l, err := deployments.Lister().List(labels.Everything())
			return len(l), err
		}
		stop := func() error {
			f.Shutdown()
			return nil
		}
		return smallbench.Controller{Factory: f, List: list, Stop: stop}, nil
	})
}
