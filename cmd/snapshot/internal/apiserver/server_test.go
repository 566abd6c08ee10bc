package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testNow = time.Date(2026, 1, 5, 3, 4, 5, 0, time.UTC)

// podFields is a field set of pods for the tests.
func podFields(obj runtime.Object) fields.Set {
	p := obj.(*corev1.Pod)
	return fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace, "spec.nodeName": p.Spec.NodeName, "status.phase": string(p.Status.Phase)}
}

// newServer serves n podgen pods (stored without TypeMeta, as informers
// store them), nodes and a forbidden resource, behind token (none if "").
func newServer(t *testing.T, n int, token string) (*httptest.Server, *rest.Config) {
	t.Helper()
	pods, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := podgen.Pod(i)
		p.TypeMeta = metav1.TypeMeta{}
		p.ManagedFields = nil
		if err := pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), ResourceVersion: "5", CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))}}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(Options{Token: token, Now: func() time.Time { return testNow }, Resources: []Resource{
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Singular: "pod", ShortNames: []string{"po"},
			Namespaced: true, ResourceVersion: fmt.Sprint(n), Store: pods, Table: printers.NewServerTable(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, nil),
			Fields: podFields, FieldNames: []string{"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"}},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node", Singular: "node", ShortNames: []string{"no"},
			ResourceVersion: "5", Store: nodes, Table: printers.NewServerTable(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, nil),
			Fields: func(obj runtime.Object) fields.Set { return fields.Set{"metadata.name": obj.(*corev1.Node).Name} }, FieldNames: []string{"metadata.name"}},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Singular: "secret", Namespaced: true,
			Forbidden: "sealed", Table: printers.NewServerTable(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, nil)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, &rest.Config{Host: srv.URL, BearerToken: token}
}

func TestDiscovery(t *testing.T) {
	_, cfg := newServer(t, 3, "")
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			names = append(names, fmt.Sprintf("%s %s %v %s %v", l.GroupVersion, r.Name, r.Namespaced, r.Kind, r.ShortNames))
		}
	}
	want := []string{"v1 pods true Pod [po]", "v1 nodes false Node [no]", "v1 secrets true Secret []"}
	if !slices.Equal(names, want) {
		t.Errorf("resources %q, want %q", names, want)
	}
}

func TestGetAndList(t *testing.T) {
	_, cfg := newServer(t, 120, "")
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	p0 := podgen.Pod(0)
	got, err := cs.CoreV1().Pods(p0.Namespace).Get(ctx, p0.Name, metav1.GetOptions{})
	if err != nil || got.Name != p0.Name || got.Spec.NodeName != p0.Spec.NodeName {
		t.Fatalf("get: %v, %+v", err, got.ObjectMeta)
	}
	_, err = cs.CoreV1().Pods(p0.Namespace).Get(ctx, "nope", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `pods "nope" not found` {
		t.Errorf("get missing: %v", err)
	}
	// Namespaces are not stored: one holding objects exists, another not.
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, p0.Namespace, metav1.GetOptions{}); err != nil || ns.Name != p0.Namespace {
		t.Errorf("namespace of stored pods: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "empty", metav1.GetOptions{}); !apierrors.IsNotFound(err) || err.Error() != `namespaces "empty" not found` {
		t.Errorf("namespace without objects: %v", err)
	}
	all, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) != 120 || all.ResourceVersion != "120" {
		t.Fatalf("list: %v, %d items, rv %q", err, len(all.Items), all.ResourceVersion)
	}
	ns, err := cs.CoreV1().Pods("ns-001").List(ctx, metav1.ListOptions{LabelSelector: "tier=backend"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ns.Items {
		if p.Namespace != "ns-001" || p.Labels["tier"] != "backend" {
			t.Errorf("selected %s/%s with tier %q", p.Namespace, p.Name, p.Labels["tier"])
		}
	}
	byNode, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + p0.Spec.NodeName})
	if err != nil || len(byNode.Items) != 1 || byNode.Items[0].Name != p0.Name {
		t.Errorf("field selector: %v, %d items", err, len(byNode.Items))
	}
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.hostname=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field: %v", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 2 {
		t.Errorf("nodes: %v, %d", err, len(nodes.Items))
	}
	if _, err := cs.CoreV1().Secrets("a").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("sealed: %v", err)
	}
}

// TestPages lists in pages, as kubectl does (limit=500) and as client-go's
// pager does, and checks that every object comes once, in order.
func TestPages(t *testing.T) {
	_, cfg := newServer(t, 120, "")
	cs := kubernetes.NewForConfigOrDie(cfg)
	var keys []string
	opts := metav1.ListOptions{Limit: 25}
	for pages := 0; ; pages++ {
		l, err := cs.CoreV1().Pods("").List(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
		if l.Continue == "" {
			if pages != 4 {
				t.Errorf("%d pages, want 5", pages+1)
			}
			break
		}
		opts.Continue = l.Continue
	}
	if len(keys) != 120 || !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != 120 {
		t.Errorf("%d keys, sorted %v", len(keys), slices.IsSorted(keys))
	}
	// A label selector applies within pages.
	l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{Limit: 10, LabelSelector: "tier=cache"})
	if err != nil || len(l.Items) != 10 {
		t.Fatalf("%v, %d", err, len(l.Items))
	}
	for _, p := range l.Items {
		if p.Labels["tier"] != "cache" {
			t.Errorf("%s: tier %q", p.Name, p.Labels["tier"])
		}
	}
	if _, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{Continue: "garbage"}); !apierrors.IsBadRequest(err) {
		t.Errorf("bad continue: %v", err)
	}
}

// TestTable asks for a table as kubectl get does.
func TestTable(t *testing.T) {
	srv, _ := newServer(t, 3, "")
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/ns-001/pods?limit=500", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, fmt.Sprintf("%s/%d", c.Name, c.Priority))
	}
	want := []string{"NAME/0", "READY/0", "STATUS/0", "RESTARTS/0", "AGE/0", "IP/1", "NODE/1", "NOMINATED NODE/1", "READINESS GATES/1"}
	if !slices.Equal(cols, want) || len(table.Rows) != 1 || table.ResourceVersion != "3" {
		t.Fatalf("columns %q, %d rows, rv %q", cols, len(table.Rows), table.ResourceVersion)
	}
	row := table.Rows[0]
	if row.Cells[0] != "app-1-00000001-x7k2p" || row.Cells[2] != "Running" || row.Cells[6] != "node-0001" {
		t.Errorf("cells %v", row.Cells)
	}
	var pom metav1.PartialObjectMetadata
	if err := json.Unmarshal(row.Object.Raw, &pom); err != nil || pom.Kind != "PartialObjectMetadata" || pom.Labels["tier"] == "" {
		t.Errorf("row object %s: %v", row.Object.Raw, err)
	}
}

// TestWatch watches as an informer does: the stored state, then nothing,
// the watch staying open; with sendInitialEvents, the bookmark that ends
// the initial events.
func TestWatch(t *testing.T) {
	_, cfg := newServer(t, 5, "")
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		ev := <-w.ResultChan()
		if ev.Type != watch.Added {
			t.Fatalf("event %v", ev)
		}
	}
	select {
	case ev, ok := <-w.ResultChan():
		t.Fatalf("event after the stored state: %v %v", ev, ok)
	case <-time.After(200 * time.Millisecond): // open, nothing to send
	}
	w.Stop()

	yes := true
	w, err = cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		ev := <-w.ResultChan()
		if ev.Type == watch.Bookmark {
			a, _ := meta.Accessor(ev.Object)
			if i != 5 || a.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" || a.GetResourceVersion() != "5" {
				t.Fatalf("bookmark after %d events: %v", i, a)
			}
			break
		}
	}
	w.Stop()

	// From the listed resourceVersion: nothing; from an older one: gone.
	w, err = cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("event from the current resourceVersion: %v", ev)
	case <-time.After(100 * time.Millisecond):
	}
	w.Stop()
	if _, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: "2"}); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from an older resourceVersion: %v", err)
	}
}

// TestInformer runs client-go's informer against the server: it syncs.
func TestInformer(t *testing.T) {
	_, cfg := newServer(t, 30, "")
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything()), &corev1.Pod{}, 0, cache.Indexers{})
	done := make(chan struct{})
	go func() { inf.Run(ctx.Done()); close(done) }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if n := len(inf.GetStore().List()); n != 30 {
		t.Errorf("informer holds %d pods, want 30", n)
	}
	cancel()
	<-done
}

// TestReadOnlyAndAuth checks that writes are refused and that a token is
// required when set.
func TestReadOnlyAndAuth(t *testing.T) {
	srv, cfg := newServer(t, 2, "s3cret")
	dyn := dynamic.NewForConfigOrDie(cfg)
	pods := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	err := pods.Namespace("ns-000").Delete(context.Background(), "x", metav1.DeleteOptions{})
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("delete: %v", err)
	}
	l, err := pods.List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 2 || l.Items[0].GetKind() != "Pod" {
		t.Errorf("dynamic list with the token: %v", err)
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, _ := http.NewRequest(method, srv.URL+"/api/v1/namespaces/ns-000/pods", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", method, resp.StatusCode)
		}
	}
	resp, err := http.Get(srv.URL + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
}
