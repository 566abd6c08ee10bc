package informers

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/mutationtest"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/seal"
)

// TestMain runs every informer of the package's tests with the mutation
// detector on (invariant 6; internal/mutationtest).
func TestMain(m *testing.M) {
	mutationtest.Enable()
	goleak.VerifyTestMain(m)
}

// server is a fake apiserver serving resources from a fake source.
type server struct {
	src    *fakesource.Source
	client kubernetes.Interface
	// config reaches the server with protobuf, as client was built.
	config *rest.Config
}

// newServer serves resources over HTTP (protobuf, through a real
// clientset).
func newServer(t *testing.T, resources ...fakeapi.Resource) *server {
	t.Helper()
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := fakeapi.Start(t.Context(), fakeapi.Options{Source: src, Resources: resources})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	config := s.Config("application/vnd.kubernetes.protobuf")
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return &server{src: src, client: cs, config: config}
}

// add adds obj to the source.
func (s *server) add(t *testing.T, obj runtime.Object) {
	t.Helper()
	if _, err := s.src.Add(obj); err != nil {
		t.Fatal(err)
	}
}

// newLogger returns a logger that buffers what it logs, and the buffer.
func newLogger(t *testing.T) (klog.Logger, func() string) {
	l := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return l, func() string { return l.GetSink().(ktesting.Underlier).GetBuffer().String() }
}

// newFactory opens a warmcache factory on path (in memory if "") and
// wraps it. The caller shuts it down.
func newFactory(t *testing.T, path string, client kubernetes.Interface, logger klog.Logger, opts ...SharedInformerOption) *Factory {
	t.Helper()
	ctx := klog.NewContext(t.Context(), logger)
	// With a key, Secrets are persisted (sealed) like every other type.
	wf, err := factory.New(ctx, factory.Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}, Keys: seal.Static(testKey)})
	if err != nil {
		t.Fatal(err)
	}
	return NewSharedInformerFactoryWithContext(ctx, wf, client, 0, opts...)
}

// testKey seals the Secrets of the tests' factories.
var testKey = func() seal.Key {
	k, err := seal.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return k
}()

// tempFile is a cache file path in the test's directory.
func tempFile(t *testing.T) string { return filepath.Join(t.TempDir(), "cache.db") }

// deadline returns a context that ends when the test does or after a
// minute, for waits that must fail rather than hang.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// syncAll starts f and waits for every informer to sync.
func syncAll(t *testing.T, f *Factory) {
	t.Helper()
	f.Start(t.Context().Done())
	res := f.WaitForCacheSyncWithContext(deadline(t))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for typ, ok := range res.Synced {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
}

// typedInformer is one generated typed informer reached through a
// factory's group, version and resource accessors.
type typedInformer struct {
	path   string // Core/V1/Pods
	access reflect.Value
}

func (ti typedInformer) informer() cache.SharedIndexInformer {
	return ti.access.MethodByName("Informer").Call(nil)[0].Interface().(cache.SharedIndexInformer)
}

// listerPackage returns the package path of the typed lister's type.
func (ti typedInformer) listerPackage() string {
	t := ti.access.MethodByName("Lister").Call(nil)[0].Elem().Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

// list calls the typed lister's List(labels.Everything()) and returns how
// many objects it returned.
func (ti typedInformer) list(t *testing.T) int {
	t.Helper()
	lister := ti.access.MethodByName("Lister").Call(nil)[0]
	out := lister.MethodByName("List").Call([]reflect.Value{reflect.ValueOf(everything)})
	if err, _ := out[1].Interface().(error); err != nil {
		t.Fatalf("%s: Lister().List: %v", ti.path, err)
	}
	return out[0].Len()
}

// typedInformers walks every group accessor of client-go's
// SharedInformerFactory interface on f (Core(), Apps(), ...), each of its
// versions and each of their typed informers.
func typedInformers(f clientinformers.SharedInformerFactory) []typedInformer {
	var out []typedInformer
	accessors := func(v reflect.Value) []reflect.Value {
		var vs []reflect.Value
		for i := range v.Type().NumMethod() {
			m := v.Type().Method(i)
			if m.Type.NumIn() != 0 || m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Interface {
				continue
			}
			vs = append(vs, v.Method(i))
		}
		return vs
	}
	names := func(v reflect.Value) []string {
		var ns []string
		for i := range v.Type().NumMethod() {
			m := v.Type().Method(i)
			if m.Type.NumIn() == 0 && m.Type.NumOut() == 1 && m.Type.Out(0).Kind() == reflect.Interface {
				ns = append(ns, m.Name)
			}
		}
		return ns
	}
	fv := reflect.ValueOf(&f).Elem()
	gnames := names(fv)
	for gi, g := range accessors(fv) {
		if gnames[gi] == "InformerName" {
			continue
		}
		gv := g.Call(nil)[0]
		vnames := names(gv)
		for vi, v := range accessors(gv) {
			vv := v.Call(nil)[0]
			rnames := names(vv)
			for ri, r := range accessors(vv) {
				rv := r.Call(nil)[0]
				if !rv.MethodByName("Informer").IsValid() || !rv.MethodByName("Lister").IsValid() {
					continue
				}
				out = append(out, typedInformer{path: strings.Join([]string{gnames[gi], vnames[vi], rnames[ri]}, "/"), access: rv})
			}
		}
	}
	return out
}

// allResources lists every resource kubernetes.Interface has a typed
// client for, as fakeapi serves them.
func allResources(t *testing.T) []fakeapi.Resource {
	t.Helper()
	var out []fakeapi.Resource
	for listType, tc := range typedClients {
		gvks, _, err := scheme.Scheme.ObjectKinds(reflect.New(listType.Elem()).Interface().(runtime.Object))
		if err != nil {
			t.Fatal(err)
		}
		gvk := gvks[0]
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		r, err := resolve(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fakeapi.Resource{GroupVersionResource: r.gvr, Kind: gvk.Kind, Namespaced: tc.namespaced})
	}
	return out
}

// newObject returns an object of gvk named name, in namespace ns if
// namespaced.
func newObject(t *testing.T, gvk schema.GroupVersionKind, ns, name string, labels map[string]string) runtime.Object {
	t.Helper()
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	m := obj.(metav1.Object)
	m.SetNamespace(ns)
	m.SetName(name)
	m.SetLabels(labels)
	return obj
}
