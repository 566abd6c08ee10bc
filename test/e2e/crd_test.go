package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/informers/dynamicinformer"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/eventlog"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "e2e.warmcache.dev", Version: "v1", Resource: "widgets"}
)

// createWidgetCRD creates the Widget CRD (through the dynamic client, so
// that the module does not depend on apiextensions-apiserver and its
// dependency tree), unless an earlier run on the shared apiserver did, and
// waits until widgets are served in namespace ns.
func createWidgetCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns string) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": widgetGVR.Resource + "." + widgetGVR.Group},
		"spec": map[string]interface{}{
			"group": widgetGVR.Group,
			"scope": "Namespaced",
			"names": map[string]interface{}{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []interface{}{map[string]interface{}{
				"name": widgetGVR.Version, "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
					"type": "object",
					"properties": map[string]interface{}{"spec": map[string]interface{}{
						"type": "object", "x-kubernetes-preserve-unknown-fields": true,
					}},
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the CRD: %v", err)
	}
	// The apiserver serves the new resource a moment after it is
	// Established: poll a LIST of it (an external condition).
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(widgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("widgets never served: %v", err)
	}
}

func widget(ns, name string, size int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": widgetGVR.GroupVersion().String(),
		"kind":       "Widget",
		"metadata":   map[string]interface{}{"name": name, "namespace": ns},
		"spec":       map[string]interface{}{"size": int64(size), "color": "blue", "parts": []interface{}{"a", "b"}},
	}}
}

// listWidgets lists the widgets of ns directly.
func listWidgets(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns string) state {
	t.Helper()
	l, err := dyn.Resource(widgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := state{}
	for _, u := range l.Items {
		s[u.GetNamespace()+"/"+u.GetName()] = u.GetResourceVersion()
	}
	return s
}

// runWidgetInformer runs a factory's dynamic informer for widgets in ns
// on file until its recorder's view equals want, then shuts the factory
// down and returns the events and whether the store was complete at
// start. With dropIn, the informer comes from package dynamicinformer's
// factory (client-go's DynamicSharedInformerFactory) over the same file.
func runWidgetInformer(ctx context.Context, t *testing.T, c *cluster, file, ns string, want state, dropIn bool) (events []event, warm bool) {
	t.Helper()
	f, err := factory.New(ctx, factory.Options{Path: file, RESTConfig: c.env.RestConfig()})
	if err != nil {
		t.Fatal(err)
	}
	start, shutdown := func() { f.Start(ctx) }, f.Shutdown
	defer func() {
		if err := shutdown(); err != nil {
			t.Errorf("shut down: %v", err)
		}
	}()
	var inf *informer.Informer
	if dropIn {
		dyn, err := dynamic.NewForConfig(c.env.RestConfig())
		if err != nil {
			t.Fatal(err)
		}
		df := dynamicinformer.NewFilteredDynamicSharedInformerFactoryWithContext(ctx, f, dyn, 0, ns, nil)
		start, shutdown = func() { df.Start(ctx.Done()) }, df.Close
		var ok bool
		if inf, ok = df.ForResource(widgetGVR).Informer().(*informer.Informer); !ok {
			t.Fatalf("dynamicinformer gave no warmcache informer: %v", df.Fallbacks())
		}
	} else if inf, err = f.ForDynamic(ctx, widgetGVR, factory.Scope{Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	st, err := inf.Store().State()
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	start()
	if !cache.WaitFor(ctx, "", reg.HasSyncedChecker()) {
		t.Fatal("the widgets informer did not sync")
	}
	// Synced means caught up: the store and what the handler was told
	// are the server's widgets now, nothing changes them afterwards.
	if d := listerState(inf.GetStore()).diff(want); d != "" {
		t.Errorf("the informer's store differs from a LIST when it synced: %s", d)
	}
	events = rec.Events()
	if initial, rest, err := split(events); err != nil || initial.diff(want) != "" || len(rest) != 0 {
		t.Errorf("when it synced, the handler's initial adds differ from a LIST (%v %s) or it had %d other events", err, initial.diff(want), len(rest))
	}
	// Nothing changes the widgets after the sync: a handler told
	// anything more (delivered before Shutdown returns) was told a state
	// that was not the server's at the sync.
	if err := shutdown(); err != nil {
		t.Errorf("shut down: %v", err)
	}
	if got := rec.Events(); len(got) != len(events) {
		t.Errorf("%d events after the sync, want none: %+v", len(got)-len(events), got[len(events):])
	}
	return events, st.Complete
}

func listerState(s cache.Store) state {
	out := state{}
	for _, obj := range s.List() {
		out[keyOf(obj)] = eventlog.ResourceVersion(obj)
	}
	return out
}

// TestCustomResourceAcrossRestart: a dynamic informer on a custom resource
// keeps its objects as unstructured in the file; after a restart, through
// package dynamicinformer's drop-in factory, it resumes the watch (no LIST
// of the resource) and, once caught up, tells its handler the widgets as
// the initial list, as a cold start would.
func TestCustomResourceAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "widgets")
	dyn, err := dynamic.NewForConfig(c.env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	createWidgetCRD(ctx, t, dyn, ns)
	const n = 300
	for i := range n {
		if _, err := dyn.Resource(widgetGVR).Namespace(ns).Create(ctx, widget(ns, fmt.Sprintf("w-%04d", i), i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "cache.db")
	before := listWidgets(ctx, t, dyn, ns)
	events, warm := runWidgetInformer(ctx, t, c, file, ns, before, false)
	if warm {
		t.Error("the first run found a complete store in a new file")
	}

	// Changes while the informer is down.
	ch := changes{created: state{}, updated: map[string][2]string{}, deleted: state{}}
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	res := dyn.Resource(widgetGVR).Namespace(ns)
	for i := range 10 {
		u, err := res.Create(ctx, widget(ns, fmt.Sprintf("new-%02d", i), i), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ch.created[ns+"/"+u.GetName()] = u.GetResourceVersion()
	}
	for _, k := range keys[:10] {
		u, err := res.Patch(ctx, k[len(ns)+1:], types.MergePatchType, []byte(`{"spec":{"color":"red"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ch.updated[k] = [2]string{before[k], u.GetResourceVersion()}
	}
	for _, k := range keys[10:20] {
		if err := res.Delete(ctx, k[len(ns)+1:], metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		ch.deleted[k] = before[k]
	}
	after := listWidgets(ctx, t, dyn, ns)
	lists0 := c.listRequests(ctx, t, widgetGVR.Resource, ns)

	// The restart goes through client-go's DynamicSharedInformerFactory
	// interface (package dynamicinformer): the same informer identity, so
	// it resumes from what the first run stored.
	events, warm = runWidgetInformer(ctx, t, c, file, ns, after, true)
	if lists := c.listRequests(ctx, t, widgetGVR.Resource, ns) - lists0; lists != 1 {
		t.Errorf("the apiserver served %v LIST requests for widgets during the restart, want 1 (the resume check)", lists)
	}
	if !warm {
		t.Error("the restart found no complete store in the file")
	}
	if len(events) != len(after) {
		t.Errorf("the restart told %d events, want the %d widgets as initial adds", len(events), len(after))
	}
	// ForDynamic knows the resource, not the kind: it records none.
	got := readCache(ctx, t, file, bolt.Identity{Group: widgetGVR.Group, Version: widgetGVR.Version, Resource: widgetGVR.Resource, Scope: store.Scope{Namespace: ns}})
	if d := got.items.diff(after); d != "" {
		t.Errorf("the cache file differs from a LIST: %s", d)
	}
}
