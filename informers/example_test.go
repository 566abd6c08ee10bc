package informers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
)

// A controller written against client-go's SharedInformerFactory runs on
// a cache file: the second run starts warm, without listing.
func Example() {
	dir, _ := os.MkdirTemp("", "warmcache-informers-example")
	defer os.RemoveAll(dir)
	src, _ := fakesource.New(fakesource.Options{})
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	srv, _ := fakeapi.Start(context.Background(), fakeapi.Options{Source: src})
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(srv.Config(""))

	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		wf, err := factory.New(ctx, factory.Options{Path: filepath.Join(dir, "cache.db")})
		if err != nil {
			panic(err)
		}
		f := informers.NewSharedInformerFactoryWithOptions(wf, client, 0, informers.WithNamespace("default"))
		pods := f.Core().V1().Pods()
		pods.Informer() // create the informer before Start
		f.Start(ctx.Done())
		for typ, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				panic(fmt.Sprintf("%v did not sync", typ))
			}
		}
		list, _ := pods.Lister().List(labels.Everything())
		fmt.Printf("run %d: %d pods, lists so far: %d\n", run, len(list), src.Stats().Lists+src.Stats().WatchLists)
		cancel()
		f.Shutdown()
	}
	// Output:
	// run 1: 1 pods, lists so far: 1
	// run 2: 1 pods, lists so far: 2
}
