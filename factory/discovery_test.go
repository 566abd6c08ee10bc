package factory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

// fakeDiscovery is client-go's fake discovery with resources a test may
// change while the factory reads them, and group versions whose
// discovery fails.
type fakeDiscovery struct {
	*discoveryfake.FakeDiscovery
	mu      sync.Mutex // guards FakeDiscovery.Resources and failing
	failing map[string]bool
}

func newFakeDiscovery(lists ...*metav1.APIResourceList) *fakeDiscovery {
	return &fakeDiscovery{FakeDiscovery: &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}}, failing: map[string]bool{}}
}

func (d *fakeDiscovery) set(lists ...*metav1.APIResourceList) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Resources = lists
}

func (d *fakeDiscovery) fail(gv string, fail bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failing[gv] = fail
}

func (d *fakeDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerGroups()
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failing[gv] {
		return nil, fmt.Errorf("the aggregated API of %s is unavailable", gv)
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersion(gv)
}

var (
	widgetsGVR    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	oldWidgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}
	gadgetsGVR    = schema.GroupVersionResource{Group: "other.io", Version: "v1", Resource: "gadgets"}
	metricsGVR    = schema.GroupVersionResource{Group: "metrics.example.io", Version: "v1", Resource: "samples"}
)

var listWatch = []string{"get", "list", "watch"}

func coreList() *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: listWatch},
		{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
	}}
}

// widgetLists serves widgets in v1 (preferred) and v1beta1, with a
// subresource.
func widgetLists() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: listWatch},
			{Name: "widgets/status", Kind: "Widget", Namespaced: true, Verbs: listWatch},
		}},
		{GroupVersion: "example.com/v1beta1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: listWatch},
		}},
	}
}

func gadgetList() *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: "other.io/v1", APIResources: []metav1.APIResource{
		{Name: "gadgets", Kind: "Gadget", Namespaced: false, Verbs: listWatch},
	}}
}

func metricsList() *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: "metrics.example.io/v1", APIResources: []metav1.APIResource{
		{Name: "samples", Kind: "Sample", Namespaced: true, Verbs: listWatch},
	}}
}

func obj(gvr schema.GroupVersionResource, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvr.GroupVersion().WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// newDynamicFake serves configmaps, widgets, gadgets and samples.
func newDynamicFake(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMapsGVR: "ConfigMapList", widgetsGVR: "WidgetList", oldWidgetsGVR: "WidgetList",
		gadgetsGVR: "GadgetList", metricsGVR: "SampleList", crdGVR: "CustomResourceDefinitionList",
	}, objs...)
}

func newDiscoveryFactory(t *testing.T, path string, dyn *dynamicfake.FakeDynamicClient) *Factory {
	t.Helper()
	l := ktesting.NewLogger(t, ktesting.NewConfig())
	o := Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}, Dynamic: dyn, Logger: &l, ClusterID: "test"}
	// client-go's fake dynamic client serves no WatchList stream and no
	// resourceVersions to resume from.
	o.Informer.Reflector.UseWatchList = reflector.WatchListOff
	o.Informer.Reflector.ResumeCheck = reflector.ResumeCheckOff
	f, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func gvrs(d *Discovered) []string {
	var out []string
	for gvr := range d.Informers() {
		out = append(out, gvr.String())
	}
	sort.Strings(out)
	return out
}

func names(gs ...schema.GroupVersionResource) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.String())
	}
	sort.Strings(out)
	return out
}

// recorded returns the GVRs of the file's resources, samples left out.
func recorded(t *testing.T, f *Factory) []string {
	t.Helper()
	ids, err := f.DB().Identities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range ids {
		if !id.IsSample() {
			out = append(out, schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource}.String())
		}
	}
	sort.Strings(out)
	return out
}

// eventually waits for cond, failing the test after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func keys(inf cache.SharedIndexInformer) []string {
	k := inf.GetStore().ListKeys()
	sort.Strings(k)
	return k
}

// TestDiscoveredFollowsDiscovery checks the informers against what
// discovery serves: one per listable and watchable resource in its
// preferred version, none for subresources, create-only resources or
// excluded ones, objects of excluded namespaces left out; a resource that
// goes has its informer stopped and its data deleted, one that comes is
// watched; a group whose discovery fails keeps its informer.
func TestDiscoveredFollowsDiscovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dyn := newDynamicFake(
		obj(configMapsGVR, "ConfigMap", "default", "a"), obj(configMapsGVR, "ConfigMap", "kube-system", "b"),
		obj(widgetsGVR, "Widget", "default", "w"), obj(gadgetsGVR, "Gadget", "", "g"),
		obj(metricsGVR, "Sample", "default", "s"),
	)
	disc := newFakeDiscovery(append([]*metav1.APIResourceList{coreList(), gadgetList(), metricsList()}, widgetLists()...)...)
	f := newDiscoveryFactory(t, filepath.Join(t.TempDir(), "f.db"), dyn)
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	var (
		mu      sync.Mutex
		added   []string
		removed []string
		handled []string // the Handler's adds, as kind namespace/name
	)
	no := false
	d, err := f.WatchDiscovered(ctx, DiscoveryOptions{
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			u := obj.(*unstructured.Unstructured)
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
		}},
		Exclude:      []ResourceRule{{Kinds: []string{"Sam*"}}, {APIGroups: []string{""}, Namespaces: []string{"kube-*"}}},
		Unstructured: true,
		PollInterval: time.Hour,
		CRDs:         &no,
		Discovery:    disc,
		OnAdd: func(gvr schema.GroupVersionResource, _ cache.SharedIndexInformer) {
			mu.Lock()
			defer mu.Unlock()
			added = append(added, gvr.String())
		},
		OnRemove: func(gvr schema.GroupVersionResource) {
			mu.Lock()
			defer mu.Unlock()
			removed = append(removed, gvr.String())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gvrs(d), names(configMapsGVR, widgetsGVR, gadgetsGVR); !slices.Equal(got, want) {
		t.Fatalf("informers %q, want %q", got, want)
	}
	if d.HasSynced() {
		t.Fatal("HasSynced before Start")
	}
	f.Start(ctx)
	if !d.WaitForCacheSync(ctx) {
		t.Fatal("did not sync")
	}
	mu.Lock()
	slices.Sort(handled)
	if want := []string{"ConfigMap default/a", "Gadget /g", "Widget default/w"}; !slices.Equal(handled, want) {
		t.Errorf("when synced, the Handler was told %q, want %q", handled, want)
	}
	mu.Unlock()
	cms, _ := d.Informer(configMapsGVR)
	if got := keys(cms); !slices.Equal(got, []string{"default/a"}) {
		t.Errorf("configmaps %q, want default/a only (kube-* excluded)", got)
	}
	g, _ := d.Informer(gadgetsGVR)
	if got := keys(g); !slices.Equal(got, []string{"g"}) {
		t.Errorf("gadgets %q", got)
	}
	eventually(t, "the file holds the watched resources", func() bool {
		return slices.Equal(recorded(t, f), names(configMapsGVR, widgetsGVR, gadgetsGVR))
	})

	// Gadgets go, samples are no longer excluded... (rules are fixed):
	// the metrics group fails and keeps nothing; other.io goes.
	disc.set(append([]*metav1.APIResourceList{coreList()}, widgetLists()...)...)
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := gvrs(d), names(configMapsGVR, widgetsGVR); !slices.Equal(got, want) {
		t.Fatalf("after gadgets went: informers %q, want %q", got, want)
	}
	if !g.IsStopped() {
		t.Error("the gadgets informer still runs")
	}
	if got, want := recorded(t, f), names(configMapsGVR, widgetsGVR); !slices.Equal(got, want) {
		t.Errorf("after gadgets went, the file holds %q, want %q", got, want)
	}

	// A failing group keeps its informer and its data.
	disc.set(append([]*metav1.APIResourceList{coreList(), gadgetList()}, widgetLists()...)...)
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !d.WaitForCacheSync(ctx) {
		t.Fatal("did not sync after gadgets came back")
	}
	disc.fail("other.io/v1", true)
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := gvrs(d), names(configMapsGVR, widgetsGVR, gadgetsGVR); !slices.Equal(got, want) {
		t.Fatalf("with other.io failing: informers %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{names(gadgetsGVR)[0]}; !slices.Equal(removed, want) {
		t.Errorf("OnRemove for %q, want %q", removed, want)
	}
	if len(added) != 4 {
		t.Errorf("OnAdd for %q, want the three resources and gadgets again", added)
	}
}

// TestDiscoveredDropsWhatWentWhileStopped checks that a resource no longer
// discovered when the factory starts again has its data deleted from the
// file, that the data of the others is kept (a warm start), and that a
// resource new since is watched.
func TestDiscoveredDropsWhatWentWhileStopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "f.db")
	dyn := newDynamicFake(obj(widgetsGVR, "Widget", "default", "w"), obj(gadgetsGVR, "Gadget", "", "g"), obj(configMapsGVR, "ConfigMap", "default", "a"))
	no := false
	run := func(disc *fakeDiscovery, check func(f *Factory, d *Discovered)) {
		f := newDiscoveryFactory(t, path, dyn)
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
		// An informer of the factory's own of the cluster's scope, created
		// before Start, keeps its data.
		if _, err := f.ForDynamic(ctx, configMapsGVR, Scope{}); err != nil {
			t.Fatal(err)
		}
		d, err := f.WatchDiscovered(ctx, DiscoveryOptions{
			Include:      []ResourceRule{{APIGroups: []string{"example.com", "other.io"}}},
			Unstructured: true, PollInterval: time.Hour, CRDs: &no, Discovery: disc,
		})
		if err != nil {
			t.Fatal(err)
		}
		f.Start(ctx)
		if !d.WaitForCacheSync(ctx) {
			t.Fatal("did not sync")
		}
		check(f, d)
	}
	run(newFakeDiscovery(append([]*metav1.APIResourceList{coreList(), gadgetList()}, widgetLists()...)...), func(f *Factory, d *Discovered) {
		if got, want := gvrs(d), names(widgetsGVR, gadgetsGVR); !slices.Equal(got, want) {
			t.Fatalf("informers %q, want %q", got, want)
		}
	})
	// Gadgets went while stopped; samples came, which the rules do not
	// select.
	run(newFakeDiscovery(append([]*metav1.APIResourceList{coreList(), metricsList()}, widgetLists()...)...), func(f *Factory, d *Discovered) {
		if got, want := gvrs(d), names(widgetsGVR); !slices.Equal(got, want) {
			t.Fatalf("informers %q, want %q", got, want)
		}
		eventually(t, "the gadgets' data is deleted", func() bool {
			return slices.Equal(recorded(t, f), names(configMapsGVR, widgetsGVR))
		})
	})
}

// TestDiscoveredErrors checks WatchDiscovered's errors.
func TestDiscoveredErrors(t *testing.T) {
	ctx := context.Background()
	f := newDiscoveryFactory(t, "", newDynamicFake())
	defer func() { _ = f.Shutdown() }()
	if _, err := f.WatchDiscovered(ctx, DiscoveryOptions{Include: []ResourceRule{{Kinds: []string{"[a-"}}}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("malformed glob: %v, want ErrInvalidOptions", err)
	}
	if _, err := f.WatchDiscovered(ctx, DiscoveryOptions{}); !errors.Is(err, ErrResource) {
		t.Errorf("no discovery client: %v, want ErrResource", err)
	}
	disc := newFakeDiscovery(coreList())
	if _, err := f.WatchDiscovered(ctx, DiscoveryOptions{Discovery: disc, Unstructured: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WatchDiscovered(ctx, DiscoveryOptions{Discovery: disc}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "already") {
		t.Errorf("second WatchDiscovered: %v, want ErrInvalidOptions", err)
	}
}

// TestResourceRules checks inclusion, exclusion (which wins) and the
// namespace filter of the rules.
func TestResourceRules(t *testing.T) {
	rs, err := newResourceRules(
		[]ResourceRule{{APIGroups: []string{"", "apps"}}, {APIGroups: []string{"*.example.com"}, Namespaces: []string{"team-*"}}},
		[]ResourceRule{{Kinds: []string{"Secret"}}, {APIGroups: []string{""}, Namespaces: []string{"kube-system"}}, {Kinds: []string{"Widget"}, Namespaces: []string{"team-b"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		group, kind string
		namespaced  bool
		want        bool
	}{
		{"", "ConfigMap", true, true},
		{"", "Secret", true, false},
		{"", "Namespace", false, true},
		{"apps", "Deployment", true, true},
		{"batch", "Job", true, false},
		{"a.example.com", "Widget", true, true},
		{"a.example.com", "Cluster", false, false}, // a rule with namespaces selects no cluster-scoped resource
	} {
		if got := rs.watches(c.group, c.kind, c.namespaced); got != c.want {
			t.Errorf("watches(%q, %q, %v) = %v, want %v", c.group, c.kind, c.namespaced, got, c.want)
		}
	}
	for _, c := range []struct {
		group, kind string
		keep, drop  []string
	}{
		{"", "ConfigMap", []string{"default", "team-a"}, []string{"kube-system"}},
		{"a.example.com", "Widget", []string{"team-a"}, []string{"default", "team-b"}},
		{"a.example.com", "Gizmo", []string{"team-b"}, []string{"default"}},
	} {
		keep, version := rs.namespaceFilter(c.group, c.kind)
		if keep == nil || version == "" {
			t.Fatalf("%s %s: no namespace filter", c.group, c.kind)
		}
		for _, ns := range c.keep {
			if !keep(ns) {
				t.Errorf("%s %s: namespace %s dropped", c.group, c.kind, ns)
			}
		}
		for _, ns := range c.drop {
			if keep(ns) {
				t.Errorf("%s %s: namespace %s kept", c.group, c.kind, ns)
			}
		}
	}
	if keep, version := rs.namespaceFilter("apps", "Deployment"); keep != nil || version != "" {
		t.Error("apps Deployment: a namespace filter, want none")
	}
	_, v1 := rs.namespaceFilter("a.example.com", "Widget")
	_, v2 := rs.namespaceFilter("a.example.com", "Gizmo")
	if v1 == v2 {
		t.Error("different namespace rules, same version")
	}
}

// gadgetCRD is the CRD of gadgets, established.
func gadgetCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": "gadgets.other.io"},
		"spec": map[string]interface{}{
			"group": "other.io", "scope": "Cluster",
			"names":    map[string]interface{}{"plural": "gadgets", "kind": "Gadget"},
			"versions": []interface{}{map[string]interface{}{"name": "v1", "served": true, "storage": true}},
		},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Established", "status": "True"}}},
	}}
}

// TestDiscoveredKeepsTheResourcesOfExistingCRDs checks that a custom
// resource whose CRD exists keeps its informer and its data while
// discovery does not serve it (an apiserver starting serves its CRDs a
// moment later), and loses them once the CRD watch sees the CRD deleted.
func TestDiscoveredKeepsTheResourcesOfExistingCRDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dyn := newDynamicFake(obj(gadgetsGVR, "Gadget", "", "g"), gadgetCRD())
	disc := newFakeDiscovery(gadgetList())
	f := newDiscoveryFactory(t, filepath.Join(t.TempDir(), "f.db"), dyn)
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	d, err := f.WatchDiscovered(ctx, DiscoveryOptions{Unstructured: true, PollInterval: time.Hour, Discovery: disc})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	if !d.WaitForCacheSync(ctx) {
		t.Fatal("did not sync")
	}
	// The CRD watch has listed the CRD once the first sweep is done.
	eventually(t, "the CRD listed", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.swept
	})
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	disc.set()
	if err := d.Refresh(ctx); err == nil {
		t.Fatal("a discovery without groups refreshed")
	}
	disc.set(coreList())
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := gvrs(d), names(configMapsGVR, gadgetsGVR); !slices.Equal(got, want) {
		t.Fatalf("with the CRD existing but not discovered: informers %q, want %q", got, want)
	}
	eventually(t, "the file holds the gadgets and the configmaps", func() bool {
		return slices.Equal(recorded(t, f), names(configMapsGVR, gadgetsGVR))
	})
	if err := dyn.Resource(crdGVR).Delete(ctx, "gadgets.other.io", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gadgets removed once their CRD is deleted", func() bool {
		return slices.Equal(gvrs(d), names(configMapsGVR)) && slices.Equal(recorded(t, f), names(configMapsGVR))
	})
}

// TestDiscoveredRelistsWhenItsRulesChange checks that the objects a
// namespace rule left out are not missing after a restart with other
// rules (the informer relists instead of resuming), and that the data of
// another informer of a watched resource in the cluster's scope (here a
// typed one, where the discovery's is unstructured) is deleted.
func TestDiscoveredRelistsWhenItsRulesChange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "f.db")
	dyn := newDynamicFake(obj(configMapsGVR, "ConfigMap", "default", "a"), obj(configMapsGVR, "ConfigMap", "kube-system", "b"))
	no := false
	run := func(exclude []ResourceRule, want ...string) {
		t.Helper()
		f := newDiscoveryFactory(t, path, dyn)
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
		d, err := f.WatchDiscovered(ctx, DiscoveryOptions{
			Exclude: exclude, Unstructured: true, PollInterval: time.Hour, CRDs: &no, Discovery: newFakeDiscovery(coreList()),
		})
		if err != nil {
			t.Fatal(err)
		}
		f.Start(ctx)
		if !d.WaitForCacheSync(ctx) {
			t.Fatal("did not sync")
		}
		inf, _ := d.Informer(configMapsGVR)
		if got := keys(inf); !slices.Equal(got, want) {
			t.Errorf("configmaps %q, want %q", got, want)
		}
		eventually(t, "the file holds the discovery's configmaps only", func() bool {
			ids, err := f.DB().Identities(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, id := range ids {
				if !id.IsSample() {
					kinds = append(kinds, id.Kind)
				}
			}
			return slices.Equal(kinds, []string{UnstructuredKind})
		})
	}
	run([]ResourceRule{{Namespaces: []string{"kube-*"}}}, "default/a")
	// A typed informer of configmaps leaves its data in the file.
	f := newDiscoveryFactory(t, path, dyn)
	if _, err := f.InformerFor(ctx, configMapsGVR, &corev1.ConfigMap{}, nopLW, Scope{}, nil); err != nil {
		t.Fatal(err)
	}
	ids, err := f.DB().Identities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ids, func(id bolt.Identity) bool { return id.Kind == "ConfigMap" }) {
		t.Fatalf("the typed informer's resource is not in the file: %v", ids)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	run(nil, "default/a", "kube-system/b")
}
