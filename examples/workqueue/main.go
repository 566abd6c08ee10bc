// Command workqueue is a pod controller in client-go's workqueue style
// whose informer cache lives in a bbolt file instead of on the Go heap.
// Stop it and start it again on the same file: the second start replays
// the file and resumes the watch instead of listing every pod.
//
//	go run ./examples/workqueue --kubeconfig ~/.kube/config --cache-file pods.db
//
// Only run's first lines and the lister's package are warmcache's, each
// marked warmcache:; the rest is plain client-go.
// Copy it, and put your controller's logic in reconcile. README.md beside
// this file says how to run it against your cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientlisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/factory"
	corelisters "github.com/warmcache/warmcache/listers/core/v1"
)

func main() {
	var o options
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: the in-cluster config)")
	flag.StringVar(&o.cacheFile, "cache-file", "pods.db", "bbolt file that keeps the pod cache across restarts")
	flag.StringVar(&o.namespace, "namespace", "", "watch only this namespace (default: all)")
	flag.IntVar(&o.workers, "workers", 2, "worker goroutines")
	klog.InitFlags(nil)
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.ErrorS(err, "Cannot load the kubeconfig")
		klog.FlushAndExit(klog.ExitFlushTimeout, 2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, config, o)
	stop()
	if err != nil {
		klog.ErrorS(err, "Controller failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

// options are the command's flags.
type options struct {
	cacheFile string
	namespace string
	workers   int
}

// run runs the controller until ctx is done, then shuts it down.
func run(ctx context.Context, config *rest.Config, o options) (err error) {
	// warmcache: one factory, one bbolt file for all of its informers. A
	// file from an earlier run is checked and reused (a warm start); a
	// corrupt or foreign one is moved aside and rebuilt by a list.
	f, err := factory.New(ctx, factory.Options{Path: o.cacheFile, RESTConfig: config})
	if err != nil {
		return err
	}
	// warmcache: Shutdown stops the informers, then flushes and closes the
	// file. It runs last, after the workers have stopped reading it.
	defer func() { err = errors.Join(err, f.Shutdown()) }()

	// warmcache: ForResource returns a cache.SharedIndexInformer whose
	// store is the file: the pods are not on the Go heap, and client-go's
	// lister interfaces read them (see newController).
	pods, err := f.ForResource(ctx, corev1.SchemeGroupVersion.WithResource("pods"), "Pod", factory.Scope{Namespace: o.namespace})
	if err != nil {
		return err
	}
	c, err := newController(pods)
	if err != nil {
		return err
	}
	defer c.queue.ShutDown()

	f.Start(ctx)
	// warmcache: on a warm start, synced means the watch resumed from the
	// stored resourceVersion, without a relist, caught up with the server,
	// and the caught-up pods were replayed to the handler as initial-list
	// adds: what a list at the start would have told it.
	for name, synced := range f.WaitForCacheSync(ctx) {
		if !synced {
			return fmt.Errorf("informer %s did not sync: %w", name, context.Cause(ctx))
		}
	}
	klog.FromContext(ctx).Info("Synced; starting workers", "workers", o.workers)
	c.run(ctx, o.workers)
	return nil
}

// controller reconciles the pods whose names its event handler queues.
type controller struct {
	queue  workqueue.TypedRateLimitingInterface[cache.ObjectName]
	lister clientlisters.PodLister
}

func newController(pods cache.SharedIndexInformer) (*controller, error) {
	c := &controller{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "pods"}),
		// warmcache: client-go's PodLister from warmcache's listers package,
		// whose List(selector) decodes only the pods it selects (client-go's
		// own would decode every pod of the file on every call).
		lister: corelisters.NewPodLister(pods.GetIndexer()),
	}
	// The handler only queues names; reconcile reads the pod from the
	// lister, so it always sees the latest state and retries are cheap.
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	return c, err
}

func (c *controller) enqueue(obj interface{}) {
	name, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(name)
}

// run processes the queue with workers goroutines until ctx is done.
func (c *controller) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNextItem(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

// processNextItem reconciles one name; it returns false once the queue is
// shut down.
func (c *controller) processNextItem(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.reconcile(ctx, name); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed; retrying", "pod", name)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// reconcile is where the controller's logic goes: compare the pod with the
// world and act. Here it only logs what it sees.
func (c *controller) reconcile(ctx context.Context, name cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	// warmcache: the lister decodes the pod from the file. As with any
	// informer, never change an object the cache hands out: DeepCopy it.
	pod, err := c.lister.Pods(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		logger.V(2).Info("Pod deleted", "pod", name)
		return nil
	}
	if err != nil {
		return err
	}
	logger.V(2).Info("Pod", "pod", name, "phase", pod.Status.Phase, "node", pod.Spec.NodeName, "resourceVersion", pod.ResourceVersion)
	return nil
}
