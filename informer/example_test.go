package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/store/memory"
)

// An informer on an in-memory store, used as any client-go
// SharedIndexInformer.
func Example() {
	src, _ := fakesource.New(fakesource.Options{})
	for _, name := range []string{"a", "b"} {
		_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	st, _ := memory.New(memory.Options{})
	inf, err := informer.New(src.Endpoint(corev1.SchemeGroupVersion.WithKind("Pod"), ""), &corev1.Pod{}, informer.Options{
		Store:    st,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		panic(err)
	}
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, initial bool) {
			fmt.Println("add", obj.(*corev1.Pod).Name, "initial:", initial)
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	cache.WaitFor(ctx, "", inf.HasSyncedChecker(), reg.HasSyncedChecker())

	pods, _ := corelisters.NewPodLister(inf.GetIndexer()).Pods("default").List(labels.Everything())
	fmt.Println("listed", len(pods))
	cancel()
	<-done
	// Output:
	// add a initial: true
	// add b initial: true
	// listed 2
}
