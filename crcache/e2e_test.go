package crcache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/testenv"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(klog.Background())
	code := m.Run()
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

// startEnv starts etcd and kube-apiserver for one test.
func startEnv(t *testing.T) (context.Context, *testenv.Env, kubernetes.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; runs without -short")
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())), 10*time.Minute)
	t.Cleanup(cancel)
	env, err := testenv.Start(ctx, t, testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	return ctx, env, cs
}

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

// seed creates namespaces a, b and c, each with 12 ConfigMaps labelled
// app=x|y|z and tier=0..3 (data v = cm-<i%3>), and 4 Secrets labelled
// team=a|b.
func seed(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	for _, ns := range []string{"a", "b", "c"} {
		create(ctx, t, cs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
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
}

// options are the cache options both caches of the side-by-side test
// have: two of the three namespaces, Secrets selected by team=a.
func options(s *runtime.Scheme) cache.Options {
	return cache.Options{
		Scheme:            s,
		DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {}},
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

// TestListMatchesControllerRuntime: crcache's List returns exactly what
// controller-runtime's default cache returns for the same options (typed,
// unstructured and metadata-only lists; InNamespace, MatchingLabels,
// MatchingLabelsSelector, MatchingFields on IndexField indexes, Limit),
// and the same errors (not started, unknown namespace, Continue,
// non-exact or unindexed fields); its informers are in the file, one per
// namespace and kind, metadata-only and unstructured ones apart.
func TestListMatchesControllerRuntime(t *testing.T) {
	ctx, env, cs := startEnv(t)
	seed(ctx, t, cs)
	s := newScheme(t)
	path := filepath.Join(t.TempDir(), "cache.db")
	crc, err := NewCache(Options{Factory: factory.Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}}})(env.RestConfig(), options(s))
	if err != nil {
		t.Fatal(err)
	}
	def, err := cache.New(env.RestConfig(), options(s))
	if err != nil {
		t.Fatal(err)
	}
	caches := map[string]cache.Cache{"crcache": crc, "controller-runtime": def}

	// Before Start, both refuse to read.
	for name, c := range caches {
		err := c.List(ctx, &corev1.ConfigMapList{})
		if _, ok := err.(*cache.ErrCacheNotStarted); !ok {
			t.Errorf("%s: List before Start = %v, want ErrCacheNotStarted", name, err)
		}
	}
	for name, c := range caches {
		if err := c.IndexField(ctx, &corev1.ConfigMap{}, "data.v", indexV); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.IndexField(ctx, &corev1.ConfigMap{}, "app", indexApp); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		caches[name] = run(ctx, t, c)
	}
	lists := map[string]func() client.ObjectList{
		"typed": func() client.ObjectList { return &corev1.ConfigMapList{} },
		"unstructured": func() client.ObjectList {
			u := &unstructured.UnstructuredList{}
			u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			return u
		},
		"metadata": func() client.ObjectList {
			m := &metav1.PartialObjectMetadataList{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			return m
		},
	}
	set, _ := labels.Parse("tier in (1,2),app!=z")
	for _, tc := range []struct {
		name    string
		opts    []client.ListOption
		want    int // items
		wantErr bool
		typed   bool // typed lists only (IndexField indexes typed objects)
	}{
		{name: "everything", want: 24},
		{name: "InNamespace", opts: []client.ListOption{client.InNamespace("a")}, want: 12},
		{name: "MatchingLabels", opts: []client.ListOption{client.MatchingLabels{"app": "x"}}, want: 8},
		{name: "MatchingLabelsSelector", opts: []client.ListOption{client.MatchingLabelsSelector{Selector: set}}, want: 8},
		{name: "InNamespace and MatchingLabels", opts: []client.ListOption{client.InNamespace("b"), client.MatchingLabels{"app": "y", "tier": "1"}}, want: 1},
		{name: "MatchingFields", opts: []client.ListOption{client.MatchingFields{"data.v": "v1"}}, want: 8, typed: true},
		{name: "MatchingFields in a namespace", opts: []client.ListOption{client.InNamespace("a"), client.MatchingFields{"data.v": "v1", "app": "y"}}, want: 4, typed: true},
		{name: "MatchingFields and labels", opts: []client.ListOption{client.MatchingFields{"data.v": "v2"}, client.MatchingLabels{"tier": "2"}}, want: 2, typed: true},
		{name: "Limit in a namespace", opts: []client.ListOption{client.InNamespace("a"), client.Limit(5)}, want: 5},
		{name: "unknown namespace", opts: []client.ListOption{client.InNamespace("c")}, wantErr: true},
		{name: "Continue", opts: []client.ListOption{client.Continue("x")}, wantErr: true},
		{name: "non-exact field", opts: []client.ListOption{client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("data.v", "v1")}}, wantErr: true},
		{name: "unindexed field", opts: []client.ListOption{client.MatchingFields{"data.w": "v1"}}, wantErr: true},
	} {
		for kind, newList := range lists {
			if tc.typed && kind != "typed" {
				continue
			}
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				got, want := newList(), newList()
				gerr := caches["crcache"].List(ctx, got, tc.opts...)
				werr := caches["controller-runtime"].List(ctx, want, tc.opts...)
				if (gerr != nil) != tc.wantErr || (werr != nil) != tc.wantErr {
					t.Fatalf("errors: crcache %v, controller-runtime %v; want an error: %v", gerr, werr, tc.wantErr)
				}
				if tc.wantErr {
					if gerr.Error() != werr.Error() {
						t.Errorf("crcache's error %q, controller-runtime's %q", gerr, werr)
					}
					return
				}
				gi, wi := items(t, got), items(t, want)
				if len(gi) != tc.want || len(wi) != tc.want {
					t.Fatalf("crcache listed %d, controller-runtime %d; want %d", len(gi), len(wi), tc.want)
				}
				if got.GetContinue() != want.GetContinue() {
					t.Errorf("continue %q, want %q", got.GetContinue(), want.GetContinue())
				}
				// A limit takes any n items: compare contents only without one.
				limited := false
				for _, o := range tc.opts {
					_, l := o.(client.Limit)
					limited = limited || l
				}
				if !limited {
					if d := cmp.Diff(wi, gi); d != "" {
						t.Errorf("crcache's items differ from controller-runtime's (-want +got):\n%s", d)
					}
				}
			})
		}
	}

	// A ByObject selector: Secrets of team a only, in both namespaces.
	gs, ws := &corev1.SecretList{}, &corev1.SecretList{}
	if err := caches["crcache"].List(ctx, gs); err != nil {
		t.Fatal(err)
	}
	if err := caches["controller-runtime"].List(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(items(t, ws), items(t, gs)); d != "" || len(gs.Items) != 4 {
		t.Errorf("Secrets: crcache listed %d, want the 4 of team a in a and b (-want +got):\n%s", len(gs.Items), d)
	}
	// Get is a point read with controller-runtime's results.
	var gc, wc corev1.ConfigMap
	key := client.ObjectKey{Namespace: "b", Name: "cm-03"}
	if err := caches["crcache"].Get(ctx, key, &gc); err != nil {
		t.Fatal(err)
	}
	if err := caches["controller-runtime"].Get(ctx, key, &wc); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wc, gc); d != "" {
		t.Errorf("Get differs (-want +got):\n%s", d)
	}

	caches["crcache"].(*running).stop(t)
	infos := resources(ctx, t, path)
	want := map[string]bool{}
	for _, ns := range []string{"a", "b"} {
		want[fmt.Sprintf("configmaps ConfigMap %s", ns)] = true
		want[fmt.Sprintf("configmaps %s %s", factory.MetadataKind, ns)] = true
		want[fmt.Sprintf("configmaps %s %s", factory.UnstructuredKind, ns)] = true
		want[fmt.Sprintf("secrets Secret %s team=a", ns)] = true
	}
	got := map[string]bool{}
	for _, in := range infos {
		id := in.Identity
		k := fmt.Sprintf("%s %s %s", id.Resource, id.Kind, id.Namespace)
		if id.LabelSelector != "" {
			k += " " + id.LabelSelector
		}
		got[k] = true
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the file's resources (-want +got):\n%s", d)
	}
}

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
	return infos
}

// TestMetadataSecretsWarmStart: metadata-only Secrets in two namespaces
// persist; a second cache on the same file lists no Secrets from the
// apiserver (no LIST, no WatchList stream) and returns the current
// Secrets, including one created while it was down. A manager given an
// option crcache cannot serve fails to build.
func TestMetadataSecretsWarmStart(t *testing.T) {
	ctx, env, cs := startEnv(t)
	seed(ctx, t, cs)
	s := newScheme(t)
	path := filepath.Join(t.TempDir(), "cache.db")
	opts := cache.Options{Scheme: s, DefaultNamespaces: map[string]cache.Config{"a": {}, "c": {}}}
	newList := func() *metav1.PartialObjectMetadataList {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		return l
	}
	names := func(c cache.Cache) []string {
		l := newList()
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range l.Items {
			if m.Kind != "Secret" || m.APIVersion != "v1" {
				t.Errorf("item %s/%s has TypeMeta %v", m.Namespace, m.Name, m.TypeMeta)
			}
			out = append(out, m.Namespace+"/"+m.Name)
		}
		sort.Strings(out)
		return out
	}
	open := func() cache.Cache {
		c, err := NewCache(Options{Factory: factory.Options{Path: path}})(env.RestConfig(), opts)
		if err != nil {
			t.Fatal(err)
		}
		// The informer exists before Start, as a controller's watch
		// creates it.
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if _, err := c.GetInformer(ctx, m); err != nil {
			t.Fatal(err)
		}
		return run(ctx, t, c)
	}
	first := open()
	if got := names(first); len(got) != 8 {
		t.Fatalf("cold: %d Secrets %v, want the 8 of a and c", len(got), got)
	}
	first.(*running).stop(t)
	create(ctx, t, cs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "new"}})
	lists0, err := env.ListRequests(ctx, "secrets")
	if err != nil {
		t.Fatal(err)
	}
	streams0, err := env.MetricSum(ctx, "apiserver_watch_list_duration_seconds_count", map[string]string{"resource": "secrets"})
	if err != nil {
		t.Fatal(err)
	}
	second := open()
	var got []string
	// The watch delivers c/new after the sync: an external event, polled
	// with a deadline.
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got = names(second)
		return len(got) == 9, nil
	})
	if len(got) != 9 || got[len(got)-1] != "c/s-3" || got[4] != "c/new" {
		t.Errorf("warm: Secrets %v, want the 8 and c/new", got)
	}
	lists, _ := env.ListRequests(ctx, "secrets")
	streams, _ := env.MetricSum(ctx, "apiserver_watch_list_duration_seconds_count", map[string]string{"resource": "secrets"})
	if lists != lists0 || streams != streams0 {
		t.Errorf("the warm cache made %v LIST requests and %v WatchList streams of secrets, want none", lists-lists0, streams-streams0)
	}
	second.(*running).stop(t)

	// A manager with options crcache cannot serve does not start.
	_, err = ctrl.NewManager(env.RestConfig(), ctrl.Options{
		Scheme:   s,
		Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{"": {}, "a": {}}},
		NewCache: NewCache(Options{Factory: factory.Options{Path: path}}),
		Metrics:  metricsserver.Options{BindAddress: "0"},
	})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewManager with the all-namespaces key = %v, want an error wrapping ErrUnsupported", err)
	}
	for _, in := range resources(ctx, t, path) {
		if in.Identity.Kind != factory.MetadataKind || in.State != inspect.StateComplete {
			t.Errorf("resource %+v state %s, want metadata-only, complete", in.Identity, in.State)
		}
	}
}
