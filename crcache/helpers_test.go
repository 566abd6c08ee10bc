package crcache

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/mutationtest"
	"github.com/warmcache/warmcache/internal/testenv"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// shared is the package's etcd and kube-apiserver (startEnv), stopped
// after the tests.
var shared = testenv.NewShared(testenv.Options{})

func TestMain(m *testing.M) {
	mutationtest.Enable()
	ctrl.SetLogger(klog.Background())
	code := shared.Run(m)
	if bench != nil {
		bench.stop()
	}
	if code == 0 {
		// controller-runtime's metadata ListerWatcher wraps each watch in
		// watch.Filter (newGVKFixupWatcher), whose goroutine blocks forever
		// sending an event that arrived after the reflector stopped reading
		// and stopped the watch: an upstream leak, in controller-runtime's
		// own cache as in this one.
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startEnv returns the package's shared etcd and kube-apiserver, started
// by the first test that asks. The tests sharing it may run in parallel:
// each works in namespaces of its own (seed) and counts only their
// requests (Env.Requests).
func startEnv(t *testing.T) (context.Context, *testenv.Env, kubernetes.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; runs without -short")
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())), 10*time.Minute)
	t.Cleanup(cancel)
	env := shared.Env(t)
	cs, err := kubernetes.NewForConfig(env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	return ctx, env, cs
}

// namespaces are a test's three namespaces, a-*, b-* and c-*, in that
// order by name.
type namespaces struct{ a, b, c string }

// running is a started cache.
type running struct {
	cache.Cache
	cancel context.CancelFunc
	done   chan error
}

func run(ctx context.Context, t *testing.T, c cache.Cache) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	r := &running{Cache: c, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Errorf("cache Start: %v", err)
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func create(ctx context.Context, t *testing.T, cs kubernetes.Interface, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Namespace:
			_, err = cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = cs.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// seed creates the test's namespaces a-*, b-* and c-*, each with 12 ConfigMaps labelled
// app=x|y|z and tier=0..3 (data v = cm-<i%3>), and 4 Secrets labelled
// team=a|b, and returns their names.
func seed(ctx context.Context, t *testing.T, env *testenv.Env, cs kubernetes.Interface) namespaces {
	t.Helper()
	nss := namespaces{a: env.Namespace(ctx, t, "a"), b: env.Namespace(ctx, t, "b"), c: env.Namespace(ctx, t, "c")}
	for _, ns := range []string{nss.a, nss.b, nss.c} {
		for i := range 12 {
			create(ctx, t, cs, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{
					"app": []string{"x", "y", "z"}[i%3], "tier": fmt.Sprint(i % 4),
				}},
				Data: map[string]string{"v": fmt.Sprintf("v%d", i%3)},
			})
		}
		for i := range 4 {
			create(ctx, t, cs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("s-%d", i), Labels: map[string]string{"team": []string{"a", "b"}[i%2]},
			}})
		}
	}
	return nss
}

// options are the cache options both caches of the side-by-side test
// have: two of the three namespaces, Secrets selected by team=a.
func options(s *runtime.Scheme, nss namespaces) cache.Options {
	return cache.Options{
		Scheme:            s,
		DefaultNamespaces: map[string]cache.Config{nss.a: {}, nss.b: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{"team": "a"})},
		},
	}
}

func indexV(o client.Object) []string {
	switch o := o.(type) {
	case *corev1.ConfigMap:
		return []string{o.Data["v"]}
	case *unstructured.Unstructured:
		v, _, _ := unstructured.NestedString(o.Object, "data", "v")
		return []string{v}
	}
	return nil
}

func indexApp(o client.Object) []string { return []string{o.GetLabels()["app"]} }

// items returns a list's items sorted by namespace and name, as objects.
func items(t *testing.T, l client.ObjectList) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	switch l := l.(type) {
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *metav1.PartialObjectMetadataList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	key := func(o runtime.Object) string {
		m := o.(metav1.Object)
		return m.GetNamespace() + "/" + m.GetName()
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// resources returns the resources of the file at path, without those
// that hold the informers' sample objects (factory.IsSample).
func resources(ctx context.Context, t *testing.T, path string) []inspect.ResourceInfo {
	t.Helper()
	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	infos, err := inspect.Resources(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var out []inspect.ResourceInfo
	for _, in := range infos {
		if !factory.IsSample(in.Identity) {
			out = append(out, in)
		}
	}
	return out
}
