package listers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientappslisters "k8s.io/client-go/listers/apps/v1"
	clientcorelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/listers"
	appslisters "github.com/warmcache/warmcache/listers/apps/v1"
	corelisters "github.com/warmcache/warmcache/listers/core/v1"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/memory"
)

func pod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

// population returns pods over three namespaces with labels of every shape.
func population() []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range 60 {
		l := map[string]string{"app": fmt.Sprintf("app-%d", i%5)}
		if i%2 == 0 {
			l["tier"] = "web"
		}
		if i%7 == 0 {
			l["canary"] = ""
		}
		pods = append(pods, pod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%02d", i), l))
	}
	return pods
}

func fill(t *testing.T, idx cache.Indexer, pods []*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}

var selectors = []string{"", "app=app-1", "app!=app-1", "app in (app-1,app-2)", "app notin (app-1)", "tier", "!tier", "canary", "app=app-3,tier", "app=none"}

// Our listers answer every selector as client-go's do, on the stores that
// push selections down (memory, and bolt with and without a namespace
// index), on client-go's own indexer, and on one without a namespace
// index.
func TestListersAnswerAsClientGo(t *testing.T) {
	mem, err := memory.New(memory.Options{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	if err != nil {
		t.Fatal(err)
	}
	indexers := map[string]cache.Indexer{
		"memory store":                mem,
		"bolt store":                  openBolt(t, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		"bolt store without an index": openBolt(t, nil),
		"client-go indexer":           cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		"without a namespace index":   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	pods := population()
	for name, idx := range indexers {
		t.Run(name, func(t *testing.T) {
			fill(t, idx, pods)
			ours, theirs := corelisters.NewPodLister(idx), clientcorelisters.NewPodLister(idx)
			for _, s := range selectors {
				sel, err := labels.Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ours.List(sel)
				if err != nil {
					t.Fatal(err)
				}
				exp, _ := theirs.List(sel)
				if !slices.Equal(names(got), names(exp)) || len(exp) == 0 && s == "" {
					t.Errorf("List(%q) = %q, client-go %q", s, names(got), names(exp))
				}
				for _, ns := range []string{"ns-0", "ns-2", "absent"} {
					got, err := ours.Pods(ns).List(sel)
					if err != nil {
						t.Fatal(err)
					}
					exp, _ := theirs.Pods(ns).List(sel)
					if !slices.Equal(names(got), names(exp)) {
						t.Errorf("Pods(%q).List(%q) = %q, client-go %q", ns, s, names(got), names(exp))
					}
				}
			}
			got, err := ours.Pods("ns-1").Get("p-01")
			if err != nil || got.Name != "p-01" {
				t.Fatalf("Get = %v, %v", got, err)
			}
			_, err = ours.Pods("ns-0").Get("p-01")
			_, exp := theirs.Pods("ns-0").Get("p-01")
			if !apierrors.IsNotFound(err) || err.Error() != exp.Error() {
				t.Fatalf("Get of a missing pod = %v, client-go %v", err, exp)
			}
		})
	}
}

// openBolt opens a pods store in a new bolt file, closed when the test
// ends.
func openBolt(t *testing.T, indexers cache.Indexers) *bolt.Store {
	t.Helper()
	ctx := context.Background()
	db, err := bolt.Open(ctx, filepath.Join(t.TempDir(), "cache.db"), bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	s, err := db.Resource(ctx, bolt.ResourceOptions{
		Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:    codec.Protobuf(nil),
		Indexers: indexers,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// countingStore records the selections pushed down and fails any read of
// every object.
type countingStore struct {
	*memory.Store
	selections []store.Selection
}

func (c *countingStore) Select(ctx context.Context, sel store.Selection, fn store.ScanFunc) error {
	c.selections = append(c.selections, sel)
	return c.Store.Select(ctx, sel, fn)
}

func (c *countingStore) List() []interface{} { panic("List read every object") }

func (c *countingStore) ByIndex(string, string) ([]interface{}, error) {
	panic("ByIndex read a whole namespace")
}

func TestListPushesTheSelectionDown(t *testing.T) {
	mem, err := memory.New(memory.Options{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, mem, population())
	cs := &countingStore{Store: mem}
	l := corelisters.NewPodLister(cs)
	sel := labels.SelectorFromSet(labels.Set{"app": "app-2"})
	all, err := l.List(sel)
	if err != nil {
		t.Fatal(err)
	}
	inNS, err := l.Pods("ns-1").List(sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 12 || len(inNS) != 4 {
		t.Fatalf("got %d and %d pods, want 12 and 4", len(all), len(inNS))
	}
	if len(cs.selections) != 2 || cs.selections[0].Namespace != "" || cs.selections[1].Namespace != "ns-1" ||
		cs.selections[0].Labels.String() != "app=app-2" || cs.selections[1].Labels.String() != "app=app-2" {
		t.Fatalf("selections pushed down: %+v", cs.selections)
	}
}

// The expansion methods are client-go's own, over the same indexer.
func TestExpansionMethodsAreClientGos(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
	}
	if err := idx.Add(rs); err != nil {
		t.Fatal(err)
	}
	var l clientappslisters.ReplicaSetLister = appslisters.NewReplicaSetLister(idx)
	got, err := l.GetPodReplicaSets(pod("ns", "p", map[string]string{"app": "x"}))
	if err != nil || len(got) != 1 || got[0].Name != "rs" {
		t.Fatalf("GetPodReplicaSets = %v, %v", got, err)
	}
	if _, err := l.GetPodReplicaSets(pod("ns", "p", map[string]string{"app": "y"})); err == nil {
		t.Fatal("GetPodReplicaSets found a ReplicaSet for a pod it does not select")
	}
}

func TestListOfAnotherTypeIsAnError(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}); err != nil {
		t.Fatal(err)
	}
	l := listers.New[*corev1.Pod](idx, corev1.Resource("pods"))
	if _, err := l.List(nil); err == nil || !strings.Contains(err.Error(), "ConfigMap") {
		t.Fatalf("List = %v, want an error naming the type", err)
	}
	if _, err := listers.NewNamespaced(l, "ns").Get("cm"); err == nil {
		t.Fatal("Get of another type succeeded")
	}
}

func TestListStopsWithItsContext(t *testing.T) {
	mem, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, mem, population())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := listers.New[*corev1.Pod](mem, corev1.Resource("pods")).ListWithContext(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("ListWithContext on a done context = %v", err)
	}
}

// The checked-in listers are what the generator writes from the client-go
// version go.mod requires.
func TestGeneratedListersAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator (go run); runs without -short (make test)")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./internal/gen", "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generator: %v\n%s", err, out)
	}
	want := generatedFiles(t, dir)
	have := generatedFiles(t, ".")
	if len(want) < 100 {
		t.Fatalf("the generator wrote %d files; client-go has more listers", len(want))
	}
	for name, w := range want {
		if h, ok := have[name]; !ok || h != w {
			t.Errorf("%s is not what the generator writes: run go generate ./listers", name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is not written by the generator any more: remove it (go generate ./listers)", name)
		}
	}
}

// generatedFiles reads the generated files under dir (every .go file in a
// group/version directory), by relative path.
func generatedFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && rel == "internal" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || !strings.Contains(rel, string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The generic lister answers as client-go's cache.NewGenericLister, and
// pushes its selections down as the typed ones do.
func TestGenericListerAnswersAsClientGo(t *testing.T) {
	idx := openBolt(t, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	fill(t, idx, population())
	gr := corev1.Resource("pods")
	ours, theirs := listers.NewGeneric(idx, gr), cache.NewGenericLister(idx, gr)
	objNames := func(objs []runtime.Object) []string {
		var pods []*corev1.Pod
		for _, o := range objs {
			pods = append(pods, o.(*corev1.Pod))
		}
		return names(pods)
	}
	for _, s := range selectors {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ours.List(sel)
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := theirs.List(sel)
		if !slices.Equal(objNames(got), objNames(exp)) {
			t.Errorf("List(%q) = %q, client-go %q", s, objNames(got), objNames(exp))
		}
		for _, ns := range []string{"ns-0", "absent"} {
			got, err := ours.ByNamespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			exp, _ := theirs.ByNamespace(ns).List(sel)
			if !slices.Equal(objNames(got), objNames(exp)) {
				t.Errorf("ByNamespace(%q).List(%q) = %q, client-go %q", ns, s, objNames(got), objNames(exp))
			}
		}
	}
	if got, err := ours.Get("ns-1/p-01"); err != nil || got.(*corev1.Pod).Name != "p-01" {
		t.Fatalf("Get(ns-1/p-01) = %v, %v", got, err)
	}
	if got, err := ours.ByNamespace("ns-1").Get("p-01"); err != nil || got.(*corev1.Pod).Name != "p-01" {
		t.Fatalf("ByNamespace(ns-1).Get(p-01) = %v, %v", got, err)
	}
	_, err := ours.ByNamespace("ns-0").Get("p-01")
	_, exp := theirs.ByNamespace("ns-0").Get("p-01")
	if !apierrors.IsNotFound(err) || err.Error() != exp.Error() {
		t.Fatalf("Get of a missing pod = %v, client-go %v", err, exp)
	}

	mem, err := memory.New(memory.Options{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, mem, population())
	cs := &countingStore{Store: mem}
	sel := labels.SelectorFromSet(labels.Set{"app": "app-2"})
	if _, err := listers.NewGeneric(cs, gr).ByNamespace("ns-1").List(sel); err != nil {
		t.Fatal(err)
	}
	if len(cs.selections) != 1 || cs.selections[0].Namespace != "ns-1" || cs.selections[0].Labels.String() != "app=app-2" {
		t.Fatalf("selections pushed down: %+v", cs.selections)
	}
}
