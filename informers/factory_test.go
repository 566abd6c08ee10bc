package informers

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/seal"
)

var everything = labels.Everything()

// identity returns the identity a warmcache informer's bolt store records.
func identity(t *testing.T, path string, inf cache.SharedIndexInformer) bolt.Identity {
	t.Helper()
	wi, ok := inf.(*informer.Informer)
	if !ok {
		t.Fatalf("%s: informer is a %T, want a warmcache *informer.Informer", path, inf)
	}
	st, ok := wi.Store().(*bolt.Store)
	if !ok {
		t.Fatalf("%s: store is a %T, want a bolt store", path, wi.Store())
	}
	return st.Identity()
}

// Every typed informer of every group and version of client-go's factory
// interface is a warmcache informer in the file, for the resource
// client-go's own ForResource maps to the same informer, and it lists,
// watches, syncs and answers its typed lister against an HTTP apiserver.
func TestEveryTypedInformer(t *testing.T) {
	resources := allResources(t)
	srv := newServer(t, resources...)
	for _, r := range resources {
		ns := ""
		if r.Namespaced {
			ns = "ns"
		}
		srv.add(t, newObject(t, r.GroupVersionKind(), ns, "obj", nil))
	}
	logger, logs := newLogger(t)
	f := newFactory(t, tempFile(t), srv.client, logger)
	defer f.Shutdown()
	clientGo := clientinformers.NewSharedInformerFactory(fake.NewClientset(), 0)

	typed := typedInformers(f)
	if len(typed) != len(resources) || len(typed) < 80 {
		t.Fatalf("%d typed informers, %d typed clients: every typed informer needs a typed client", len(typed), len(resources))
	}
	clientGoTyped := map[string]cache.SharedIndexInformer{}
	for _, ti := range typedInformers(clientGo) {
		clientGoTyped[ti.path] = ti.informer()
	}
	for _, ti := range typed {
		inf := ti.informer()
		if again := ti.informer(); again != inf {
			t.Errorf("%s: a second Informer() returned another informer", ti.path)
		}
		id := identity(t, ti.path, inf)
		gvr := schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource}
		gi, err := clientGo.ForResource(gvr)
		if err != nil {
			t.Errorf("%s: recorded as %v, which client-go's ForResource does not know: %v", ti.path, gvr, err)
			continue
		}
		if gi.Informer() != clientGoTyped[ti.path] {
			t.Errorf("%s: recorded as %v, which client-go maps to another informer", ti.path, gvr)
		}
		mine, err := f.ForResource(gvr)
		if err != nil || mine.Informer() != inf {
			t.Errorf("%s: ForResource(%v) = %v, %v; want the typed informer", ti.path, gvr, mine, err)
		}
	}
	if fb := f.Fallbacks(); len(fb) != 0 {
		t.Fatalf("fallbacks: %v\n%s", fb, logs())
	}
	syncAll(t, f)
	for _, ti := range typed {
		if n := ti.list(t); n != 1 {
			t.Errorf("%s: Lister().List returned %d objects, want 1", ti.path, n)
		}
		if pkg := ti.listerPackage(); !strings.HasPrefix(pkg, "github.com/warmcache/warmcache/listers/") {
			t.Errorf("%s: Lister() is a lister of %s, want warmcache's (package listers)", ti.path, pkg)
		}
	}
	gi, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	if objs, err := gi.Lister().ByNamespace("ns").List(everything); err != nil || len(objs) != 1 {
		t.Fatalf("generic lister: %v, %v", objs, err)
	}
	if pkg := reflect.TypeOf(gi.Lister()).PkgPath(); pkg != "github.com/warmcache/warmcache/listers" {
		t.Errorf("ForResource's Lister() is a lister of %s, want warmcache's (package listers)", pkg)
	}
	if len(f.WaitForCacheSync(t.Context().Done())) != len(typed) {
		t.Fatal("WaitForCacheSync does not report every started informer")
	}
}

func TestForResourceUnknown(t *testing.T) {
	logger, _ := newLogger(t)
	f := newFactory(t, "", fake.NewClientset(), logger)
	defer f.Shutdown()
	for _, gvr := range []string{"pods.v2.", "bindings.v1.", "widgets.v1.example.com"} {
		parts := strings.SplitN(gvr, ".", 3)
		r := corev1.SchemeGroupVersion.WithResource(parts[0])
		r.Version, r.Group = parts[1], parts[2]
		if _, err := f.ForResource(r); !errors.Is(err, ErrUnknownType) {
			t.Errorf("ForResource(%v) = %v, want ErrUnknownType", r, err)
		}
	}
}

// widget is a type client-go's scheme does not know.
type widget struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

// A type that cannot be persisted gets newFunc's informer, with a log line
// and its reason in Fallbacks; so does a tweak that sets more than
// selectors.
func TestFallbacks(t *testing.T) {
	t.Run("after Shutdown", func(t *testing.T) {
		logger, logs := newLogger(t)
		f := newFactory(t, tempFile(t), fake.NewClientset(), logger)
		f.Shutdown()
		inf := f.Core().V1().Pods().Informer()
		if inf == nil {
			t.Fatal("no informer after Shutdown (client-go's factory returns one)")
		}
		if fb := f.Fallbacks(); len(fb) != 0 {
			t.Fatalf("an informer asked for after Shutdown is recorded as a fallback: %v", fb)
		}
		if strings.Contains(logs(), "in-memory informer") {
			t.Fatalf("an informer asked for after Shutdown was logged as a fallback:\n%s", logs())
		}
	})
	t.Run("unknown type", func(t *testing.T) {
		logger, logs := newLogger(t)
		f := newFactory(t, tempFile(t), fake.NewClientset(), logger)
		defer f.Shutdown()
		own := cache.NewSharedIndexInformer(&cache.ListWatch{}, &widget{}, 0, nil)
		got := f.InformerFor(&widget{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return own })
		if got != own {
			t.Fatalf("InformerFor returned %T, want newFunc's informer", got)
		}
		if err := f.Fallbacks()[reflect.TypeFor[*widget]()]; !errors.Is(err, ErrUnknownType) {
			t.Fatalf("fallback reason %v, want ErrUnknownType", err)
		}
		if !strings.Contains(logs(), "using client-go's in-memory informer") {
			t.Fatalf("no log line for the fallback:\n%s", logs())
		}
	})
	t.Run("tweak sets a resourceVersion", func(t *testing.T) {
		srv := newServer(t)
		srv.add(t, newObject(t, podGVK, "ns", "a", nil))
		logger, logs := newLogger(t)
		f := newFactory(t, tempFile(t), srv.client, logger, WithTweakListOptions(func(o *metav1.ListOptions) { o.ResourceVersion = "0" }))
		defer f.Shutdown()
		inf := f.Core().V1().Pods().Informer()
		if _, ok := inf.(*informer.Informer); ok {
			t.Fatal("a tweak that sets resourceVersionMatch got a persistent informer")
		}
		if err := f.Fallbacks()[reflect.TypeFor[*corev1.Pod]()]; !errors.Is(err, ErrUnsupportedTweak) {
			t.Fatalf("fallback reason %v, want ErrUnsupportedTweak", err)
		}
		if !strings.Contains(logs(), "using client-go's in-memory informer") {
			t.Fatalf("no log line for the fallback:\n%s", logs())
		}
		// The fallback runs with the factory and stops at its Shutdown.
		syncAll(t, f)
		equalStrings(t, "pods", podNames(t, f), []string{"ns/a"})
		f.Shutdown()
		if !inf.IsStopped() {
			t.Fatal("the fallback informer still runs after Shutdown")
		}
	})
}

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// InformerFor gives the warmcache informer the indexers of the informer
// newFunc builds, as a controller that calls InformerFor with its own
// indexers expects.
func TestInformerForKeepsNewFuncIndexers(t *testing.T) {
	srv := newServer(t)
	srv.add(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Spec: corev1.PodSpec{NodeName: "n1"}})
	logger, _ := newLogger(t)
	f := newFactory(t, tempFile(t), srv.client, logger)
	defer f.Shutdown()
	byNode := func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Spec.NodeName}, nil }
	inf := f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewPodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{"byNode": byNode})
	})
	if _, ok := inf.(*informer.Informer); !ok {
		t.Fatalf("InformerFor returned a %T, want a warmcache informer", inf)
	}
	if f.Core().V1().Pods().Informer() != inf {
		t.Fatal("the typed informer is not the one InformerFor created")
	}
	syncAll(t, f)
	if objs, err := inf.GetIndexer().ByIndex("byNode", "n1"); err != nil || len(objs) != 1 {
		t.Fatalf("ByIndex(byNode, n1) = %v, %v", objs, err)
	}
}

// client-go's fake clientset serves as the client too, with in-memory
// stores when the factory has no file.
func TestFakeClientset(t *testing.T) {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	logger, _ := newLogger(t)
	f := newFactory(t, "", client, logger)
	defer f.Shutdown()
	added := make(chan string, 2)
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { added <- obj.(*corev1.Pod).Name },
	}); err != nil {
		t.Fatal(err)
	}
	syncAll(t, f)
	equalStrings(t, "pods", podNames(t, f), []string{"ns/a"})
	if _, err := client.CoreV1().Pods("ns").Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := deadline(t)
	for _, want := range []string{"a", "b"} {
		select {
		case got := <-added:
			if got != want {
				t.Fatalf("added %s, want %s", got, want)
			}
		case <-timeout.Done():
			t.Fatalf("no add for %s", want)
		}
	}
}

// Secrets follow the warmcache factory's default: kept in memory, as
// client-go keeps them, without a key; persisted sealed with one.
func TestSecretsInformerFollowsTheSealingDefault(t *testing.T) {
	logger, _ := newLogger(t)
	ctx := klog.NewContext(t.Context(), logger)
	for _, withKey := range []bool{false, true} {
		o := factory.Options{Path: tempFile(t), Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}}
		if withKey {
			o.Keys = seal.Static(testKey)
		}
		wf, err := factory.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		f := NewSharedInformerFactoryWithContext(ctx, wf, fake.NewClientset(), 0)
		st := f.Core().V1().Secrets().Informer().(*informer.Informer).Store()
		pods := f.Core().V1().Pods().Informer().(*informer.Informer).Store()
		if _, ok := pods.(*bolt.Store); !ok {
			t.Errorf("pods: %T, want the file", pods)
		}
		if _, ok := st.(*bolt.Store); ok != withKey {
			t.Errorf("with a key %v, the Secrets are in a %T", withKey, st)
		}
		res, err := inspect.Resources(ctx, wf.DB())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			// A resource's sample object (bolt.Identity.IsSample) is stored as
			// the resource is.
			isSecrets := strings.TrimSuffix(r.Identity.Resource, bolt.SampleResourceSuffix) == "secrets"
			if _, sealed := seal.InnerName(r.Codec); sealed != (isSecrets && withKey) || (isSecrets && r.Objects != 0) {
				t.Errorf("with a key %v, %s stored with codec %q and %d objects", withKey, r.Identity.Resource, r.Codec, r.Objects)
			}
		}
		f.Shutdown()
	}
}

// A Factory whose factory.Factory was shut down directly (not through the
// Factory's Shutdown) starts nothing, as client-go's factory after
// Shutdown: WaitForCacheSync returns at once without the informers created
// before or after, instead of waiting for informers that never run.
func TestStartAfterFactoryShutDownDirectly(t *testing.T) {
	ctx := t.Context()
	wf, err := factory.New(ctx, factory.Options{Path: tempFile(t), Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}})
	if err != nil {
		t.Fatal(err)
	}
	f := NewSharedInformerFactoryWithContext(ctx, wf, fake.NewClientset(), 0)
	defer f.Shutdown()
	if err := wf.Err(); err != nil {
		t.Fatalf("Err before Shutdown: %v", err)
	}
	f.Core().V1().Pods().Informer()
	if err := wf.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := wf.Err(); !errors.Is(err, factory.ErrShutdown) || !errors.Is(err, informer.ErrStopped) {
		t.Fatalf("Err after Shutdown: %v, want factory.ErrShutdown and informer.ErrStopped", err)
	}
	f.Core().V1().ConfigMaps().Informer()
	f.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, testkit.Timeout())
	defer cancel()
	if got := f.WaitForCacheSync(wctx.Done()); len(got) != 0 || wctx.Err() != nil {
		t.Fatalf("WaitForCacheSync: %v (waited until its timeout: %v), want no informer started", got, wctx.Err())
	}
}
