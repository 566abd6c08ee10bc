package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
)

// discoveryCRD is a namespaced custom resource of the test's own group.
type discoveryCRD struct {
	gvr  schema.GroupVersionResource
	kind string
}

func newDiscoveryCRD(group, kind string) discoveryCRD {
	return discoveryCRD{gvr: schema.GroupVersionResource{Group: group, Version: "v1", Resource: strings.ToLower(kind) + "s"}, kind: kind}
}

func (c discoveryCRD) name() string { return c.gvr.Resource + "." + c.gvr.Group }

// create creates the CRD and, once the apiserver serves it, one object
// named name in ns.
func (c discoveryCRD) create(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns, name string) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": c.name()},
		"spec": map[string]interface{}{
			"group": c.gvr.Group,
			"scope": "Namespaced",
			"names": map[string]interface{}{"plural": c.gvr.Resource, "singular": strings.ToLower(c.kind), "kind": c.kind, "listKind": c.kind + "List"},
			"versions": []interface{}{map[string]interface{}{
				"name": c.gvr.Version, "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", c.name(), err)
	}
	t.Cleanup(func() { c.delete(context.Background(), t, dyn) })
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(c.gvr.GroupVersion().WithKind(c.kind))
	obj.SetNamespace(ns)
	obj.SetName(name)
	// The apiserver serves the resource a moment after the CRD is
	// Established: retry the create (an external condition).
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(c.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", c.kind, ns, name, err)
	}
}

// delete deletes the CRD (its objects with it) unless it is gone, and
// waits until it is.
func (c discoveryCRD) delete(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	err := dyn.Resource(crdGVR).Delete(ctx, c.name(), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("delete CRD %s: %v", c.name(), err)
		return
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(crdGVR).Get(ctx, c.name(), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("CRD %s not deleted: %v", c.name(), err)
	}
}

// recordedResources returns the resources of the factory's file (samples
// left out).
func recordedResources(ctx context.Context, t *testing.T, f *factory.Factory) []schema.GroupVersionResource {
	t.Helper()
	ids, err := f.DB().Identities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.GroupVersionResource
	for _, id := range ids {
		if !id.IsSample() {
			out = append(out, schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource})
		}
	}
	return out
}

// waitFor waits for cond, failing the test after a deadline.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestDiscoveryFollowsCRDs runs a factory in discovery mode on the
// shared apiserver, selecting the configmaps of the test's namespace and
// the custom resources of its own groups but Gizmos and the cherries of
// another namespace: a CRD created while it runs is watched and synced,
// with its objects; one deleted is no longer watched and its data leaves
// the file; after a restart on the same file, a CRD created while it was
// stopped is watched, the data of one deleted while it was stopped is
// deleted, and the configmaps resume warm. The discovery is polled once in ten minutes: the watch of CRDs is
// what makes it prompt. The factory runs under the smallest memory budget,
// whose list gate lets one informer list at a time.
func TestDiscoveryFollowsCRDs(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "discovery")
	other := c.env.Namespace(ctx, t, "discovery-other")
	dyn, err := dynamic.NewForConfig(c.env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{ns, other} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "settings"}}
		if _, err := c.cs.CoreV1().ConfigMaps(n).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	groups := ns + ".e2e.warmcache.dev"
	var (
		apples   = newDiscoveryCRD("a."+groups, "Apple")
		gizmos   = newDiscoveryCRD("a."+groups, "Gizmo")
		bananas  = newDiscoveryCRD("b."+groups, "Banana")
		cherries = newDiscoveryCRD("c."+groups, "Cherry")
	)
	cmGVR := corev1.SchemeGroupVersion.WithResource("configmaps")
	path := filepath.Join(t.TempDir(), "cache.db")

	var (
		mu      sync.Mutex
		removed []schema.GroupVersionResource
	)
	// start runs a factory on path in discovery mode until the test
	// shuts it down.
	start := func() (*factory.Factory, *factory.Discovered) {
		t.Helper()
		// The smallest memory budget: one relist, resume check or
		// replay at a time among all the discovered informers.
		f, err := factory.New(ctx, factory.Options{Path: path, RESTConfig: c.config, MemoryBudget: factory.MinMemoryBudget})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Shutdown() })
		d, err := f.WatchDiscovered(ctx, factory.DiscoveryOptions{
			Include: []factory.ResourceRule{
				{APIGroups: []string{""}, Kinds: []string{"ConfigMap"}, Namespaces: []string{ns}},
				{APIGroups: []string{"*." + groups}},
			},
			Exclude: []factory.ResourceRule{
				{Kinds: []string{"Gizmo"}},
				{APIGroups: []string{"c." + groups}, Namespaces: []string{other}},
			},
			PollInterval: 10 * time.Minute,
			OnRemove: func(gvr schema.GroupVersionResource) {
				mu.Lock()
				defer mu.Unlock()
				removed = append(removed, gvr)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		f.Start(ctx)
		return f, d
	}
	// holds waits until d has a synced informer of gvr whose store holds
	// exactly keys.
	holds := func(d *factory.Discovered, gvr schema.GroupVersionResource, keys ...string) cache.SharedIndexInformer {
		t.Helper()
		var inf cache.SharedIndexInformer
		waitFor(ctx, t, "an informer of "+gvr.String()+" holding "+strings.Join(keys, ","), func() bool {
			var ok bool
			inf, ok = d.Informer(gvr)
			if !ok || !inf.HasSynced() {
				return false
			}
			got := inf.GetStore().ListKeys()
			slices.Sort(got)
			return slices.Equal(got, keys)
		})
		return inf
	}
	inFile := func(f *factory.Factory, gvr schema.GroupVersionResource) bool {
		return slices.Contains(recordedResources(ctx, t, f), gvr)
	}

	// Running: configmaps of ns only, then apples and bananas come, and
	// Gizmos, excluded, are never watched.
	f, d := start()
	if !d.WaitForCacheSync(ctx) {
		t.Fatal("the discovered informers did not sync")
	}
	cms := holds(d, cmGVR, ns+"/settings")
	if _, ok, _ := cms.GetStore().GetByKey(other + "/settings"); ok {
		t.Error("a configmap of a namespace no rule includes is in the store")
	}
	apples.create(ctx, t, dyn, ns, "green")
	gizmos.create(ctx, t, dyn, ns, "g")
	bananas.create(ctx, t, dyn, ns, "yellow")
	applesInf := holds(d, apples.gvr, ns+"/green")
	holds(d, bananas.gvr, ns+"/yellow")
	// Gizmos were established before bananas, which are watched: a
	// refresh that saw bananas saw gizmos.
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Informer(gizmos.gvr); ok || inFile(f, gizmos.gvr) {
		t.Error("gizmos, excluded, are watched or in the file")
	}
	if !inFile(f, apples.gvr) {
		t.Error("the apples' data is not in the file")
	}

	// Deleted while running: the informer stops and the data goes.
	apples.delete(ctx, t, dyn)
	waitFor(ctx, t, "the apples' informer removed, its data deleted and OnRemove told", func() bool {
		_, ok := d.Informer(apples.gvr)
		mu.Lock()
		defer mu.Unlock()
		return !ok && !inFile(f, apples.gvr) && len(removed) > 0
	})
	if _, err := applesInf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err == nil {
		t.Error("the removed apples' informer accepts handlers: it was not stopped")
	}
	mu.Lock()
	if !slices.Equal(removed, []schema.GroupVersionResource{apples.gvr}) {
		t.Errorf("OnRemove told %v, want the apples only", removed)
	}
	mu.Unlock()
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// Stopped: bananas go, cherries come.
	bananas.delete(ctx, t, dyn)
	cherries.create(ctx, t, dyn, ns, "red")
	hidden := &unstructured.Unstructured{}
	hidden.SetGroupVersionKind(cherries.gvr.GroupVersion().WithKind(cherries.kind))
	hidden.SetNamespace(other)
	hidden.SetName("hidden")
	if _, err := dyn.Resource(cherries.gvr).Namespace(other).Create(ctx, hidden, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	f, d = start()
	inf, ok := d.Informer(cmGVR)
	if !ok {
		t.Fatal("no configmaps informer after the restart")
	}
	if st, err := inf.(*informer.Informer).Store().State(); err != nil || !st.Complete {
		t.Errorf("the configmaps did not start warm (%+v, %v)", st, err)
	}
	if !d.WaitForCacheSync(ctx) {
		t.Fatal("the discovered informers did not sync after the restart")
	}
	holds(d, cherries.gvr, ns+"/red") // not the hidden one, excluded by its namespace
	holds(d, cmGVR, ns+"/settings")
	if _, ok := d.Informer(bananas.gvr); ok {
		t.Error("bananas, deleted while stopped, are watched")
	}
	waitFor(ctx, t, "the bananas' data deleted from the file", func() bool { return !inFile(f, bananas.gvr) })
	if !inFile(f, cmGVR) || !inFile(f, cherries.gvr) {
		t.Errorf("the file holds %v, want the configmaps and the cherries", recordedResources(ctx, t, f))
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
}
