package fakeapi

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/warmcache/warmcache/internal/testkit"
)

var widgets = Resource{
	GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
	Kind:                 "Widget",
	Namespaced:           true,
}

func widget(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgets.GroupVersionKind())
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]interface{}{"size": int64(3)}
	return u
}

func TestDiscovery(t *testing.T) {
	src := newSource(t, 1)
	s := startServer(t, Options{Source: src, Resources: []Resource{Pods, widgets}})
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config(""))
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != DefaultVersion.GitVersion {
		t.Errorf("version %q, want %q", v.GitVersion, DefaultVersion.GitVersion)
	}
	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	if !names[""] || !names["example.com"] || len(groups) != 2 {
		t.Errorf("groups %v, want the core group and example.com", names)
	}
	found := map[string]metav1.APIResource{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = r
		}
	}
	if r, ok := found["v1/pods"]; !ok || r.Kind != "Pod" || !r.Namespaced || len(r.Verbs) != 3 {
		t.Errorf("v1/pods: %+v", r)
	}
	if r, ok := found["example.com/v1/widgets"]; !ok || r.Kind != "Widget" {
		t.Errorf("example.com/v1/widgets: %+v", r)
	}
	if len(found) != 2 {
		t.Errorf("resources %v, want pods and widgets", found)
	}
}

func TestUnstructuredResource(t *testing.T) {
	src := newSource(t, 0)
	for _, name := range []string{"a", "b"} {
		if _, err := src.Add(widget("ns", name)); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, Options{Source: src, Resources: []Resource{Pods, widgets}})
	dc, err := dynamic.NewForConfig(s.Config(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := dc.Resource(widgets.GroupVersionResource).Namespace("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].GetName() != "a" {
		t.Fatalf("listed %d widgets", len(list.Items))
	}
	if size, _, _ := unstructured.NestedInt64(list.Items[1].Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size %d, want 3", size)
	}
	w, err := dc.Resource(widgets.GroupVersionResource).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := src.Delete(widget("ns", "a")); err != nil {
		t.Fatal(err)
	}
	ev := testkit.Recv(t, w)
	if u, ok := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Deleted || !ok || u.GetName() != "a" {
		t.Errorf("event %s %T, want the deletion of a", ev.Type, ev.Object)
	}

	// Custom resources are served as JSON only, as kube-apiserver does.
	resp, _ := get(t, "GET", s.URL+"/apis/example.com/v1/widgets", "application/vnd.kubernetes.protobuf")
	if resp.StatusCode != 406 {
		t.Errorf("protobuf-only request for widgets: status %d, want 406", resp.StatusCode)
	}
	resp, _ = get(t, "GET", s.URL+"/apis/example.com/v1/widgets", "application/vnd.kubernetes.protobuf, */*")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("protobuf-or-anything request for widgets: %d %s, want JSON", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
