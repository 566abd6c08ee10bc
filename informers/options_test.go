package informers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
)

var nodes = fakeapi.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node"}

func podNames(t *testing.T, f *Factory) []string {
	t.Helper()
	pods, err := f.Core().V1().Pods().Lister().List(everything)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	sort.Strings(names)
	return names
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %q, want %q", what, got, want)
		}
	}
}

// WithNamespace restricts namespaced resources and is recorded in their
// scope; cluster-scoped ones ignore it, as client-go's do.
func TestWithNamespace(t *testing.T) {
	srv := newServer(t, fakeapi.Pods, nodes)
	srv.add(t, newObject(t, podGVK, "a", "p1", nil))
	srv.add(t, newObject(t, podGVK, "b", "p2", nil))
	srv.add(t, newObject(t, corev1.SchemeGroupVersion.WithKind("Node"), "", "n1", nil))
	logger, _ := newLogger(t)
	f := newFactory(t, tempFile(t), srv.client, logger, WithNamespace("a"))
	defer f.Shutdown()
	podInf, nodeInf := f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
	syncAll(t, f)
	equalStrings(t, "pods", podNames(t, f), []string{"a/p1"})
	if id := identity(t, "pods", podInf); id.Namespace != "a" {
		t.Fatalf("pods identity %+v, want namespace a", id)
	}
	if n, err := f.Core().V1().Nodes().Lister().List(everything); err != nil || len(n) != 1 {
		t.Fatalf("nodes: %v, %v", n, err)
	}
	if id := identity(t, "nodes", nodeInf); id.Namespace != "" {
		t.Fatalf("nodes identity %+v, want no namespace", id)
	}
}

// A tweak's selectors are the informer's scope: two factories with
// different tweaks on one file never see each other's data, and a
// restart with the same tweak starts warm.
func TestTweakIsPartOfTheScope(t *testing.T) {
	srv := newServer(t)
	srv.add(t, newObject(t, podGVK, "ns", "x1", map[string]string{"app": "x"}))
	srv.add(t, newObject(t, podGVK, "ns", "y1", map[string]string{"app": "y"}))
	srv.add(t, newObject(t, podGVK, "ns", "y2", map[string]string{"app": "y"}))
	path := tempFile(t)
	run := func(app string) []string {
		logger, _ := newLogger(t)
		f := newFactory(t, path, srv.client, logger, WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + app }))
		defer f.Shutdown()
		inf := f.Core().V1().Pods().Informer()
		syncAll(t, f)
		if id := identity(t, "pods", inf); id.LabelSelector != "app="+app {
			t.Fatalf("identity %+v, want label selector app=%s", id, app)
		}
		return podNames(t, f)
	}
	equalStrings(t, "app=x", run("x"), []string{"ns/x1"})
	equalStrings(t, "app=y", run("y"), []string{"ns/y1", "ns/y2"})
	lists := srv.src.Stats().Lists + srv.src.Stats().WatchLists
	equalStrings(t, "app=x again", run("x"), []string{"ns/x1"})
	// A warm start lists nothing but its resume check (a LIST of at most
	// one object reading the server's resourceVersion, package reflector).
	if again := srv.src.Stats().Lists + srv.src.Stats().WatchLists; again != lists+1 {
		t.Fatalf("the restart with the same tweak listed %d times, want a warm start (its one resume check)", again-lists)
	}
}

// A cold start lists, a warm start on the same file replays it and
// resumes the watch without listing, and sees the changes made between.
func TestWarmStartDoesNotList(t *testing.T) {
	srv := newServer(t)
	srv.add(t, newObject(t, podGVK, "ns", "a", nil))
	path := tempFile(t)
	run := func() []string {
		logger, _ := newLogger(t)
		f := newFactory(t, path, srv.client, logger)
		defer f.Shutdown()
		f.Core().V1().Pods().Informer()
		syncAll(t, f)
		return podNames(t, f)
	}
	equalStrings(t, "cold", run(), []string{"ns/a"})
	lists := srv.src.Stats().Lists + srv.src.Stats().WatchLists
	srv.add(t, newObject(t, podGVK, "ns", "b", nil))
	logger, _ := newLogger(t)
	f := newFactory(t, path, srv.client, logger)
	defer f.Shutdown()
	got := make(chan string, 4)
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { got <- obj.(*corev1.Pod).Name },
	}); err != nil {
		t.Fatal(err)
	}
	syncAll(t, f)
	seen := map[string]bool{}
	timeout := deadline(t)
	for len(seen) < 2 {
		select {
		case n := <-got:
			seen[n] = true
		case <-timeout.Done():
			t.Fatal("no add for the pod created while stopped")
		}
	}
	if again := srv.src.Stats().Lists + srv.src.Stats().WatchLists; again != lists+1 {
		t.Fatalf("the warm start listed %d times, want only its resume check", again-lists)
	}
}

// WithTransform transforms what is stored; WithCustomResyncConfig gives
// one type its own resync period.
func TestTransformAndResync(t *testing.T) {
	srv := newServer(t, fakeapi.Pods, nodes)
	srv.add(t, newObject(t, podGVK, "ns", "a", map[string]string{"big": "yes"}))
	logger, _ := newLogger(t)
	var transformed atomic.Int32
	f := newFactory(t, tempFile(t), srv.client, logger,
		WithTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetLabels(map[string]string{"transformed": "yes"})
				transformed.Add(1)
			}
			return obj, nil
		}),
		WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: 20 * time.Millisecond}),
	)
	defer f.Shutdown()
	resyncs := make(chan struct{}, 1)
	if _, err := f.Core().V1().Pods().Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, new any) {
			if old.(*corev1.Pod).ResourceVersion == new.(*corev1.Pod).ResourceVersion {
				select {
				case resyncs <- struct{}{}:
				default:
				}
			}
		},
	}, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	syncAll(t, f)
	p, err := f.Core().V1().Pods().Lister().Pods("ns").Get("a")
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels["transformed"] != "yes" || transformed.Load() == 0 {
		t.Fatalf("stored pod has labels %v, want the transformed ones", p.Labels)
	}
	select {
	case <-resyncs:
	case <-deadline(t).Done():
		t.Fatal("no resync with the custom period")
	}
}

// A transform or an index function that changes meaning between two runs
// on one file, with WithTransformVersion or WithIndexVersion changed too,
// is never answered from what the old one stored: the warm start relists
// the objects (transform) or rebuilds the index entries (index). An index
// added with AddIndexers is rebuilt at every start, without a version.
func TestVersionsOfTransformAndIndexes(t *testing.T) {
	srv := newServer(t)
	srv.add(t, newObject(t, podGVK, "ns", "a", nil))
	path := tempFile(t)
	labelWith := func(v string) cache.TransformFunc {
		return func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetLabels(map[string]string{"transform": v})
			}
			return obj, nil
		}
	}
	// indexWith files a pod under prefix+its name.
	indexWith := func(prefix string) cache.IndexFunc {
		return func(obj any) ([]string, error) { return []string{prefix + obj.(*corev1.Pod).Name}, nil }
	}
	// run runs the pods' informer, created with index "created" (prefix
	// created) and, unless added is "", then given index "added" (prefix
	// added), and returns the stored pod's transform label and whether
	// each index files it under its prefix (added: true if not given).
	run := func(transform, created, added string, opts ...SharedInformerOption) (label string, createdOK, addedOK bool) {
		t.Helper()
		logger, _ := newLogger(t)
		f := newFactory(t, path, srv.client, logger, append(opts, WithTransform(labelWith(transform)))...)
		defer f.Shutdown()
		inf := f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewPodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{"created": indexWith(created)})
		})
		if added != "" {
			if err := inf.AddIndexers(cache.Indexers{"added": indexWith(added)}); err != nil {
				t.Fatal(err)
			}
		}
		syncAll(t, f)
		p, err := f.Core().V1().Pods().Lister().Pods("ns").Get("a")
		if err != nil {
			t.Fatal(err)
		}
		has := func(index, value string) bool {
			keys, err := inf.GetIndexer().IndexKeys(index, value)
			if err != nil {
				t.Fatal(err)
			}
			return len(keys) == 1 && keys[0] == "ns/a"
		}
		return p.Labels["transform"], has("created", created+"a"), added == "" || has("added", added+"a")
	}
	for _, r := range []struct {
		name                      string
		transform, created, added string
		transformVersion          string
		indexVersion              string
	}{
		{"cold start", "1", "c1-", "", "1", "1"},
		{"the transform changed", "2", "c1-", "", "2", "1"},
		{"the index changed", "2", "c2-", "", "2", "2"},
		{"an index added", "2", "c2-", "a1-", "2", "2"},
		{"the added index changed", "2", "c2-", "a2-", "2", "2"},
	} {
		label, c, a := run(r.transform, r.created, r.added, WithTransformVersion(r.transformVersion), WithIndexVersion(r.indexVersion))
		if label != r.transform || !c || !a {
			t.Errorf("%s: transform label %q, indexed %v, %v; want %s, true, true", r.name, label, c, a, r.transform)
		}
	}
}

// With WithRESTConfig the informers list and watch through clients built
// from the config, not through the client's typed clients (here a
// clientset of a server that is gone), with the tweak applied to every
// request, after the reflector's own options (its TimeoutSeconds); the
// watch's events reach the store.
func TestWithRESTConfigListsAndWatchesThroughTheConfig(t *testing.T) {
	srv := newServer(t)
	srv.add(t, newObject(t, podGVK, "ns", "x1", map[string]string{"app": "x"}))
	srv.add(t, newObject(t, podGVK, "ns", "y1", map[string]string{"app": "y"}))
	// Nothing listens on port 1: every request of this client fails.
	gone, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger(t)
	f := newFactory(t, tempFile(t), gone, logger, WithRESTConfig(srv.config),
		WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector, o.TimeoutSeconds = "app=x", ptr.To[int64](1234) }))
	defer f.Shutdown()
	f.Core().V1().Pods().Informer()
	syncAll(t, f)
	equalStrings(t, "synced through the config, tweaked", podNames(t, f), []string{"ns/x1"})
	srv.add(t, newObject(t, podGVK, "ns", "x2", map[string]string{"app": "x"}))
	srv.add(t, newObject(t, podGVK, "ns", "y2", map[string]string{"app": "y"}))
	err = wait.PollUntilContextTimeout(deadline(t), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(podNames(t, f)) == 2, nil
	})
	if err != nil {
		t.Fatalf("the watch's add never reached the store: %v", err)
	}
	equalStrings(t, "after the watch", podNames(t, f), []string{"ns/x1", "ns/x2"})
	if len(f.Fallbacks()) != 0 {
		t.Fatalf("fallbacks: %v", f.Fallbacks())
	}
	reqs := srv.src.Requests()
	if len(reqs) == 0 {
		t.Fatal("the server saw no request")
	}
	for _, r := range reqs {
		if r.Options.LabelSelector != "app=x" || r.Options.TimeoutSeconds == nil || *r.Options.TimeoutSeconds != 1234 {
			t.Errorf("%s request with label selector %q and timeout %d (0: none): want the tweak's, app=x and 1234", r.Verb, r.Options.LabelSelector, ptr.Deref(r.Options.TimeoutSeconds, 0))
		}
	}
}

// acceptRecorder serves h and records the Accept header of every list and
// watch of pods.
type acceptRecorder struct {
	h       http.Handler
	mu      sync.Mutex
	accepts []string
}

func (a *acceptRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/pods") {
		a.mu.Lock()
		a.accepts = append(a.accepts, r.Header.Get("Accept"))
		a.mu.Unlock()
	}
	a.h.ServeHTTP(w, r)
}

func (a *acceptRecorder) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.accepts)
}

// WithRESTConfig asks for protobuf when the config leaves the content type
// to the default (a kubeconfig's), without changing the caller's config,
// and keeps a content type the config sets.
func TestWithRESTConfigAsksForProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		contentType string
		want        string // the Accept header's first media type
	}{
		{"default content type", "", "application/vnd.kubernetes.protobuf"},
		{"JSON set", "application/json", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := fakesource.New(fakesource.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := src.Add(newObject(t, podGVK, "ns", "a", nil)); err != nil {
				t.Fatal(err)
			}
			h, err := fakeapi.NewHandler(fakeapi.Options{Source: src})
			if err != nil {
				t.Fatal(err)
			}
			rec := &acceptRecorder{h: h}
			hs := httptest.NewServer(rec)
			defer hs.Close()
			config := &rest.Config{Host: hs.URL}
			config.ContentType = tc.contentType
			logger, _ := newLogger(t)
			f := newFactory(t, tempFile(t), fake.NewClientset(), logger, WithRESTConfig(config))
			defer f.Shutdown()
			f.Core().V1().Pods().Informer()
			syncAll(t, f)
			equalStrings(t, "pods", podNames(t, f), []string{"ns/a"})
			if config.ContentType != tc.contentType || config.AcceptContentTypes != "" {
				t.Errorf("the caller's config was changed: content type %q, accept %q", config.ContentType, config.AcceptContentTypes)
			}
			accepts := rec.seen()
			if len(accepts) == 0 {
				t.Fatal("the server saw no request for pods")
			}
			for _, a := range accepts {
				if !strings.HasPrefix(a, tc.want) {
					t.Errorf("a request for pods accepts %q, want %s first", a, tc.want)
				}
			}
		})
	}
}
