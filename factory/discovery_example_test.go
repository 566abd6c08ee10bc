package factory_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/factory"
)

// A controller that watches every resource of the cluster but Events and
// the objects of kube-system, as Argo CD's application controller does,
// in one cache file that follows CRDs as they are created and deleted.
func ExampleFactory_WatchDiscovered() {
	ctx := context.Background()
	f, err := factory.New(ctx, factory.Options{
		Path:       "/var/cache/my-controller/cache.db",
		RESTConfig: &rest.Config{Host: "https://kubernetes.default.svc"},
	})
	if err != nil {
		panic(err)
	}
	defer f.Shutdown()
	d, err := f.WatchDiscovered(ctx, factory.DiscoveryOptions{
		Exclude: []factory.ResourceRule{
			{APIGroups: []string{"", "events.k8s.io"}, Kinds: []string{"Event"}},
			{Namespaces: []string{"kube-system"}},
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) { fmt.Printf("%T added\n", obj) },
		},
		OnRemove: func(gvr schema.GroupVersionResource) { fmt.Println(gvr, "is gone") },
	})
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	if !d.WaitForCacheSync(ctx) {
		panic("not synced")
	}
	for gvr, inf := range d.Informers() {
		fmt.Println(gvr, len(inf.GetStore().ListKeys()))
	}
}
