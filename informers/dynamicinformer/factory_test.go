package dynamicinformer

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/mutationtest"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt"
)

// TestMain runs every informer of the package's tests with the mutation
// detector on (internal/mutationtest).
func TestMain(m *testing.M) {
	mutationtest.Enable()
	goleak.VerifyTestMain(m)
}

var (
	podsGVR       = corev1.SchemeGroupVersion.WithResource("pods")
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// server is a fake apiserver of pods and configmaps, and a dynamic client
// of it (JSON, as client-go's dynamic client asks).
type server struct {
	src    *fakesource.Source
	client dynamic.Interface
}

func newServer(t *testing.T) *server {
	t.Helper()
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := fakeapi.Resource{GroupVersionResource: configMapsGVR, Kind: "ConfigMap", Namespaced: true}
	s, err := fakeapi.Start(t.Context(), fakeapi.Options{Source: src, Resources: []fakeapi.Resource{fakeapi.Pods, cm}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	client, err := dynamic.NewForConfig(s.Config("application/json"))
	if err != nil {
		t.Fatal(err)
	}
	return &server{src: src, client: client}
}

func (s *server) add(t *testing.T, obj runtime.Object) {
	t.Helper()
	if _, err := s.src.Add(obj); err != nil {
		t.Fatal(err)
	}
}

// appPod is the kit's pod of namespace ns labelled app=app.
func appPod(ns, name, app string) *corev1.Pod {
	return testkit.Pod(name, "", testkit.Namespace(ns), testkit.Labels{"app": app})
}

// newFactory opens a warmcache factory on path and wraps it; the test
// shuts it down.
func newFactory(t *testing.T, path string, s *server, logger klog.Logger, namespace string, tweak func(*metav1.ListOptions)) *Factory {
	t.Helper()
	ctx := klog.NewContext(t.Context(), logger)
	wf, err := factory.New(ctx, factory.Options{Path: path, ClusterID: "test", Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFilteredDynamicSharedInformerFactoryWithContext(ctx, wf, s.client, 0, namespace, tweak)
	t.Cleanup(f.Shutdown)
	return f
}

// syncAll starts f and fails the test unless every started informer
// syncs.
func syncAll(t *testing.T, f *Factory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	f.Start(t.Context().Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", gvr)
		}
	}
}

// adds records the names of the objects a handler is told as adds.
type adds struct {
	mu    sync.Mutex
	names []string
}

func (a *adds) OnAdd(obj interface{}, _ bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.names = append(a.names, obj.(*unstructured.Unstructured).GetName())
}
func (a *adds) OnUpdate(interface{}, interface{}) {}
func (a *adds) OnDelete(interface{})              {}

func (a *adds) sorted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(slices.Values(a.names))
}

// listNames lists every object of g and returns their sorted names,
// failing unless each is unstructured.
func listNames(t *testing.T, g clientinformers.GenericInformer) []string {
	t.Helper()
	objs, err := g.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("lister returned %T, want *unstructured.Unstructured", o)
		}
		names = append(names, u.GetName())
	}
	slices.Sort(names)
	return names
}

// TestWarmRestart runs a namespace's pods of one label through the
// factory, stops it, changes the server, and starts again on the same
// file: the informer is warmcache's, its lister selects, and the restart
// resumes without listing the pods again yet tells its handler the
// server's state.
func TestWarmRestart(t *testing.T) {
	s := newServer(t)
	for _, p := range []*corev1.Pod{appPod("a", "p1", "x"), appPod("a", "p2", "x"), appPod("a", "p3", "y"), appPod("b", "p4", "x")} {
		s.add(t, p)
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }
	logger := ktesting.NewLogger(t, ktesting.NewConfig())

	f := newFactory(t, path, s, logger, "a", tweak)
	pods := f.ForResource(podsGVR)
	if again := f.ForResource(podsGVR); again != pods {
		t.Fatal("ForResource returned another informer for the same resource")
	}
	if _, ok := pods.Informer().(*informer.Informer); !ok || len(f.Fallbacks()) != 0 {
		t.Fatalf("informer is %T, fallbacks %v: want warmcache's", pods.Informer(), f.Fallbacks())
	}
	cold := &adds{}
	if _, err := pods.Informer().AddEventHandler(cold); err != nil {
		t.Fatal(err)
	}
	syncAll(t, f)
	if got, want := listNames(t, pods), []string{"p1", "p2"}; !slices.Equal(got, want) {
		t.Fatalf("cold list %v, want %v", got, want)
	}
	if o, err := pods.Lister().ByNamespace("a").Get("p2"); err != nil || o.(*unstructured.Unstructured).GetLabels()["app"] != "x" {
		t.Fatalf("Get a/p2: %v, %v", o, err)
	}
	if got := cold.sorted(); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("cold start told adds %v", got)
	}
	f.Shutdown()

	// While it is down, one pod of its scope goes and one comes.
	if _, err := s.src.Delete(appPod("a", "p1", "x")); err != nil {
		t.Fatal(err)
	}
	s.add(t, appPod("a", "p5", "x"))
	s.add(t, appPod("b", "p6", "x"))
	before := s.src.Stats()
	if before.WatchLists != 1 {
		t.Fatalf("the cold start made %d WatchList requests, want 1", before.WatchLists)
	}

	f = newFactory(t, path, s, logger, "a", tweak)
	pods = f.ForResource(podsGVR)
	warm := &adds{}
	if _, err := pods.Informer().AddEventHandler(warm); err != nil {
		t.Fatal(err)
	}
	syncAll(t, f)
	want := []string{"p2", "p5"}
	if got := listNames(t, pods); !slices.Equal(got, want) {
		t.Fatalf("warm list %v, want %v", got, want)
	}
	if got := warm.sorted(); !slices.Equal(got, want) {
		t.Fatalf("warm start told adds %v, want %v", got, want)
	}
	after := s.src.Stats()
	if wl := after.WatchLists - before.WatchLists; wl != 0 {
		t.Fatalf("warm start made %d WatchList requests, want 0 (a resume)", wl)
	}
	if l := after.Lists - before.Lists; l > 1 {
		t.Fatalf("warm start made %d LIST requests, want at most the resume check's", l)
	}
}

// TestUnsupportedTweakFallsBack gives a tweak that sets a resourceVersion:
// the informer is client-go's, in memory, said in Fallbacks and the log,
// and still serves the namespace's pods.
func TestUnsupportedTweakFallsBack(t *testing.T) {
	s := newServer(t)
	s.add(t, appPod("a", "p1", "x"))
	s.add(t, appPod("b", "p2", "x"))
	logger, logged := newLogger(t)
	f := newFactory(t, filepath.Join(t.TempDir(), "cache.db"), s, logger, "a", func(o *metav1.ListOptions) { o.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan })
	pods := f.ForResource(podsGVR)
	if _, ok := pods.Informer().(*informer.Informer); ok {
		t.Fatal("a tweak that sets ResourceVersionMatch got a persistent informer")
	}
	if err := f.Fallbacks()[podsGVR]; !errors.Is(err, informers.ErrUnsupportedTweak) {
		t.Fatalf("fallback reason %v, want ErrUnsupportedTweak", err)
	}
	if !strings.Contains(logged(), "in-memory informer") {
		t.Fatalf("no log line for the fallback:\n%s", logged())
	}
	syncAll(t, f)
	if got := listNames(t, pods); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("fallback list %v, want [p1]", got)
	}
}

// TestInformerAfterShutdown asks for an informer after Shutdown: as
// client-go's factory, it returns one that never runs, neither logged nor
// recorded as a fallback.
func TestInformerAfterShutdown(t *testing.T) {
	s := newServer(t)
	logger, logged := newLogger(t)
	f := newFactory(t, filepath.Join(t.TempDir(), "cache.db"), s, logger, "", nil)
	f.Shutdown()
	pods := f.ForResource(podsGVR)
	if pods == nil || pods.Informer() == nil {
		t.Fatal("no informer after Shutdown (client-go's factory returns one)")
	}
	if fb := f.Fallbacks(); len(fb) != 0 {
		t.Fatalf("an informer asked for after Shutdown is recorded as a fallback: %v", fb)
	}
	if strings.Contains(logged(), "in-memory informer") {
		t.Fatalf("an informer asked for after Shutdown was logged as a fallback:\n%s", logged())
	}
}

// TestInformerAfterStart asks for an informer after Start: as client-go's,
// it is not waited for until the next Start runs it.
func TestInformerAfterStart(t *testing.T) {
	s := newServer(t)
	s.add(t, appPod("a", "p1", "x"))
	s.add(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c1"}})
	f := newFactory(t, filepath.Join(t.TempDir(), "cache.db"), s, ktesting.NewLogger(t, ktesting.NewConfig()), "", nil)
	f.ForResource(podsGVR)
	syncAll(t, f)
	cms := f.ForResource(configMapsGVR)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	if got := f.WaitForCacheSync(ctx.Done()); len(got) != 1 || !got[podsGVR] {
		t.Fatalf("before its Start: WaitForCacheSync %v, want only pods, synced", got)
	}
	syncAll(t, f)
	if got := listNames(t, cms); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("configmaps %v, want [c1]", got)
	}
	if !cache.WaitForCacheSync(ctx.Done(), cms.Informer().HasSynced) {
		t.Fatal("configmaps did not sync")
	}
}

// newLogger returns a logger that buffers what it logs, and the buffer.
func newLogger(t *testing.T) (klog.Logger, func() string) {
	l := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return l, func() string { return l.GetSink().(ktesting.Underlier).GetBuffer().String() }
}

// TestFakeDynamicClient runs the factory on client-go's fake dynamic
// client, as a controller's unit tests do: it cannot stream a list, so the
// informer lists with LIST, syncs, and follows the fake's watch.
func TestFakeDynamicClient(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		u.SetNamespace("a")
		u.SetName(name)
		return u
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"}, widget("w1"))
	s := &server{client: client}
	f := newFactory(t, filepath.Join(t.TempDir(), "cache.db"), s, ktesting.NewLogger(t, ktesting.NewConfig()), "", nil)
	g := f.ForResource(widgets)
	if _, ok := g.Informer().(*informer.Informer); !ok {
		t.Fatalf("informer is %T, fallbacks %v: want warmcache's", g.Informer(), f.Fallbacks())
	}
	syncAll(t, f)
	if got := listNames(t, g); !slices.Equal(got, []string{"w1"}) {
		t.Fatalf("synced list %v, want [w1]", got)
	}
	if _, err := client.Resource(widgets).Namespace("a").Create(t.Context(), widget("w2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, testkit.Timeout(), true, func(context.Context) (bool, error) {
		return slices.Equal(listNames(t, g), []string{"w1", "w2"}), nil
	})
	if err != nil {
		t.Fatalf("the informer never saw w2 created through the fake's watch: %v (list %v)", err, listNames(t, g))
	}
}

// TestStartAfterFactoryShutDownDirectly: once its factory.Factory was
// shut down directly, a Factory starts nothing, as client-go's after
// Shutdown, so WaitForCacheSync waits for none of its informers.
func TestStartAfterFactoryShutDownDirectly(t *testing.T) {
	s := newServer(t)
	ctx := t.Context()
	wf, err := factory.New(ctx, factory.Options{Path: filepath.Join(t.TempDir(), "cache.db"), ClusterID: "test", Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFilteredDynamicSharedInformerFactoryWithContext(ctx, wf, s.client, 0, "", nil)
	defer f.Shutdown()
	f.ForResource(podsGVR)
	if err := wf.Shutdown(); err != nil {
		t.Fatal(err)
	}
	f.ForResource(configMapsGVR)
	f.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, testkit.Timeout())
	defer cancel()
	if got := f.WaitForCacheSync(wctx.Done()); len(got) != 0 || wctx.Err() != nil {
		t.Fatalf("WaitForCacheSync: %v (waited until its timeout: %v), want no informer started", got, wctx.Err())
	}
}
