package dynamicinformer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers/dynamicinformer"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
)

// A controller written against client-go's DynamicSharedInformerFactory
// runs on a cache file: the first run lists the resource, the second
// starts warm from the file and asks the server for the changes since.
// fakeapi stands in for a kube-apiserver; a custom resource is reached
// the same way, by its GroupVersionResource.
func Example() {
	dir, _ := os.MkdirTemp("", "warmcache-dynamicinformer-example")
	defer os.RemoveAll(dir)
	src, _ := fakesource.New(fakesource.Options{})
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	srv, _ := fakeapi.Start(context.Background(), fakeapi.Options{Source: src})
	defer srv.Close()
	client := dynamic.NewForConfigOrDie(srv.Config(""))
	pods := corev1.SchemeGroupVersion.WithResource("pods")

	for run := 1; run <= 2; run++ {
		before := src.Stats()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		wf, err := factory.New(ctx, factory.Options{Path: filepath.Join(dir, "cache.db")})
		if err != nil {
			panic(err)
		}
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(wf, client, 0, "default", nil)
		inf := f.ForResource(pods) // create the informer before Start
		f.Start(ctx.Done())
		for gvr, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				panic(fmt.Sprintf("%v did not sync", gvr))
			}
		}
		list, _ := inf.Lister().List(labels.Everything())
		after := src.Stats()
		fmt.Printf("run %d: %d pods; %d WatchList streams\n", run, len(list), after.WatchLists-before.WatchLists)
		cancel()
		f.Shutdown()
	}
	// Output:
	// run 1: 1 pods; 1 WatchList streams
	// run 2: 1 pods; 0 WatchList streams
}
