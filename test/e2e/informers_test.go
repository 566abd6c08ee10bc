package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/store/bolt"
)

// TestSampleControllerOnInformerFactory runs a sample-controller-shaped
// controller, written against client-go's informers.SharedInformerFactory,
// on warmcache's factory against a real apiserver: cold on an empty file,
// stopped, changes made while it is down, then warm on the same file. The
// warm start lists nothing but its resume checks (no WatchList) and the controller
// reconciles the changes. The cold start lists and watches through
// warmcache's clients (informers.WithRESTConfig), the warm one through the
// controller's clientset: the file one wrote serves the other.
func TestSampleControllerOnInformerFactory(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "sample")
	foos := c.cs.CoreV1().ConfigMaps(ns)
	createFoo := func(name string, replicas int) {
		t.Helper()
		foo := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{
			fooDeploymentKey: name + "-deploy", fooReplicasKey: strconv.Itoa(replicas),
		}}
		if _, err := foos.Create(ctx, foo, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"a": 1, "b": 2, "c": 3}
	for name, n := range want {
		createFoo(name, n)
	}
	path := filepath.Join(t.TempDir(), "sample.db")
	requests := func() (lists, watchLists float64) {
		for _, r := range []string{"configmaps", "deployments"} {
			lists += c.listRequests(ctx, t, r, ns)
			watchLists += c.watchListRequests(ctx, t, r, ns)
		}
		return lists, watchLists
	}

	// run runs the controller on the file until it has reconciled want,
	// and returns the LIST and WatchList requests its start made.
	run := func(opts ...informers.SharedInformerOption) (lists, watchLists float64) {
		t.Helper()
		logger := ktesting.NewLogger(t, ktesting.NewConfig())
		runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
		defer cancel()
		wf, err := factory.New(runCtx, factory.Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}})
		if err != nil {
			t.Fatal(err)
		}
		f := informers.NewSharedInformerFactoryWithContext(runCtx, wf, c.cs, time.Hour, append(opts, informers.WithNamespace(ns))...)
		defer f.Shutdown()
		ctrl, err := newSampleController(c.cs, f)
		if err != nil {
			t.Fatal(err)
		}
		if fb := f.Fallbacks(); len(fb) != 0 {
			t.Fatalf("informers in memory: %v", fb)
		}
		for _, inf := range []cache.SharedIndexInformer{f.Core().V1().ConfigMaps().Informer(), f.Apps().V1().Deployments().Informer()} {
			if _, ok := inf.(*informer.Informer); !ok {
				t.Fatalf("the factory gave a %T, want a warmcache informer", inf)
			}
		}
		lists0, watchLists0 := requests()
		f.Start(runCtx.Done())
		for typ, ok := range f.WaitForCacheSync(runCtx.Done()) {
			if !ok {
				t.Fatalf("%v did not sync", typ)
			}
		}
		lists1, watchLists1 := requests()
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(runCtx, 2) }()
		waitReconciled(ctx, t, c, ns, want)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return lists1 - lists0, watchLists1 - watchLists0
	}

	lists, watchLists := run(informers.WithRESTConfig(c.config))
	t.Logf("cold start: %v LIST, %v WatchList requests", lists, watchLists)
	if lists+watchLists == 0 {
		t.Fatal("the cold start made no LIST nor WatchList request")
	}

	// While the controller is down: a foo is resized, one is added, and a
	// deployment it owns is deleted.
	foo, err := foos.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foo.Data[fooReplicasKey] = "5"
	if _, err := foos.Update(ctx, foo, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["a"] = 5
	createFoo("d", 4)
	want["d"] = 4
	if err := c.cs.AppsV1().Deployments(ns).Delete(ctx, "b-deploy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The warm start lists nothing but each informer's resume check (one
	// LIST of at most one object, package reflector): two informers, two.
	if lists, watchLists := run(); lists != 2 || watchLists != 0 {
		t.Fatalf("the warm start made %v LIST and %v WatchList requests, want the 2 resume checks and no WatchList", lists, watchLists)
	}
}

// waitReconciled waits until every foo of want has its deployment, owned
// by it, of the wanted size, and reports that size in its status. It reads
// with GET only, so that LIST counts stay the controller's.
func waitReconciled(ctx context.Context, t *testing.T, c *cluster, ns string, want map[string]int) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for name, n := range want {
			foo, err := c.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			d, err := c.cs.AppsV1().Deployments(ns).Get(ctx, name+"-deploy", metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			switch {
			case !metav1.IsControlledBy(d, foo):
				last = d.Name + " not controlled by its foo"
			case ptr.Deref(d.Spec.Replicas, 1) != int32(n):
				last = d.Name + " has " + strconv.Itoa(int(ptr.Deref(d.Spec.Replicas, 1))) + " replicas"
			case foo.Annotations[fooStatusKey] != strconv.Itoa(n):
				last = "foo " + name + " reports " + foo.Annotations[fooStatusKey]
			default:
				continue
			}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("not reconciled: %v (last: %s)", err, last)
	}
}
