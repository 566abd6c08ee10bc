package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientlisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/internal/eventlog"
	corelisters "github.com/warmcache/warmcache/listers/core/v1"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
)

// scopeObjects is how many ConfigMaps each of the two namespaces of
// TestScopedInformersShareAFile starts with: two rounds of churn
// (scopeChurn) of twelve objects each.
const scopeObjects = 24

// tierIndex files ConfigMaps under their "tier" label.
const tierIndex = "tier"

func byTier(obj interface{}) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	if v, ok := m.GetLabels()["tier"]; ok {
		return []string{v}, nil
	}
	return nil, nil
}

// scopedInformer is one informer of a TestScopedInformersShareAFile run
// and the scope it must keep to.
type scopedInformer struct {
	name       string
	namespace  string   // its namespace, "" for all
	namespaces []string // the test's namespaces it watches (its view is compared there)
	selector   string   // its label selector, "" for every object
	inf        cache.SharedIndexInformer
	events     recorder

	// mu guards problems: events outside the scope, or told before the
	// store had the change.
	mu       sync.Mutex
	problems []string
}

// handler records inf's events and checks each one: the object of an add
// or update is in the informer's scope (a delete may carry the state an
// object had when it left it), and the store is not behind the event (as
// in client-go, the indexer has the change before the handler is told: it
// holds the object at the event's resourceVersion or a newer one, or no
// longer holds it; after a delete, it holds no state of the object as old
// as the deleted one).
func (s *scopedInformer) handler(t *testing.T) cache.ResourceEventHandler {
	sel, err := labels.Parse(s.selector)
	if err != nil {
		t.Fatal(err)
	}
	problem := func(format string, args ...interface{}) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
	check := func(op string, obj interface{}) {
		key, rv := keyOf(obj), eventlog.ResourceVersion(obj)
		if op != "delete" {
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				problem("%s of a %T", op, obj)
				return
			}
			if s.namespace != "" && cm.Namespace != s.namespace || !sel.Matches(labels.Set(cm.Labels)) {
				problem("%s of %s (labels %v), outside the scope", op, key, cm.Labels)
			}
		}
		cur, exists, err := s.inf.GetIndexer().GetByKey(key)
		switch {
		case err != nil:
			problem("%s of %s: the store's GetByKey: %v", op, key, err)
		case !exists:
		case op != "delete" && rvLess(eventlog.ResourceVersion(cur), rv):
			problem("%s of %s at %s: the store holds %s", op, key, rv, eventlog.ResourceVersion(cur))
		case op == "delete" && !rvLess(rv, eventlog.ResourceVersion(cur)):
			problem("delete of %s at %s: the store holds %s", key, rv, eventlog.ResourceVersion(cur))
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj interface{}, initial bool) { check("add", obj); s.events.OnAdd(obj, initial) },
		UpdateFunc: func(oldObj, newObj interface{}) { check("update", newObj); s.events.OnUpdate(oldObj, newObj) },
		DeleteFunc: func(obj interface{}) { check("delete", obj); s.events.OnDelete(obj) },
	}
}

// TestScopedInformersShareAFile runs four ConfigMap informers of different
// scopes on one cache file, against a real apiserver: an unscoped one with
// a custom index (factory.ForResource), one limited to a namespace
// (informers.WithNamespace), a cluster-wide one selected by labels
// (informers.WithTweakListOptions) and one limited to the other namespace
// and selected by labels. Objects are created, updated, relabelled into and
// out of the selectors, deleted and recreated while the informers run and
// while they are stopped; after the warm restart (the watch resumed, or,
// after an etcd compaction, a relist) each handler is told the server's
// state within its scope as the initial list, as after a cold start, and
// each informer's lister (warmcache's, client-go's, by index)
// and its part of the file equal the apiserver's own list with the same
// namespace and selector.
func TestScopedInformersShareAFile(t *testing.T) {
	t.Parallel()
	t.Run("resume", func(t *testing.T) {
		t.Parallel()
		ctx := needEnv(t)
		c, ns := sharedCluster(ctx, t, "scope")
		ns2 := c.env.Namespace(ctx, t, "scope")
		runScopes(ctx, t, c, ns, ns2, func() {})
	})
	t.Run("relist after compaction", func(t *testing.T) {
		t.Parallel()
		ctx := needEnv(t)
		c := startCluster(ctx, t, "--watch-cache=false")
		ns, ns2 := c.env.Namespace(ctx, t, "scope"), c.env.Namespace(ctx, t, "scope")
		runScopes(ctx, t, c, ns, ns2, func() {
			if _, err := c.env.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// runScopes is TestScopedInformersShareAFile on namespaces ns and ns2;
// between is called while the informers are stopped, after the changes.
func runScopes(ctx context.Context, t *testing.T, c *cluster, ns, ns2 string, between func()) {
	// The label key "scope" has the test's namespace as its value, so that
	// the cluster-wide selected informer sees the test's objects only.
	tierA := "scope=" + ns + ",tier=a"
	ours := "scope=" + ns
	for _, n := range []string{ns, ns2} {
		for i := range scopeObjects {
			createScopeCM(ctx, t, c, n, fmt.Sprintf("cm-%d", i), scopeLabels(ns, i%3))
		}
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	// run starts the informers on the file, calls during once they have
	// synced, waits until each one's handler view equals the apiserver's,
	// checks the listers, and stops them. It returns what the handlers saw.
	run := func(during func()) []*scopedInformer {
		t.Helper()
		logger := ktesting.NewLogger(t, ktesting.NewConfig())
		runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
		defer cancel()
		wf, err := factory.New(runCtx, factory.Options{Path: path, RESTConfig: c.config, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}})
		if err != nil {
			t.Fatal(err)
		}
		all, err := wf.ForResource(runCtx, cmGVR, "ConfigMap", factory.Scope{}, factory.WithIndexers(cache.Indexers{tierIndex: byTier}))
		if err != nil {
			t.Fatal(err)
		}
		fNS := informers.NewSharedInformerFactoryWithContext(runCtx, wf, c.cs, 0, informers.WithNamespace(ns))
		fSel := informers.NewSharedInformerFactoryWithContext(runCtx, wf, c.cs, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = tierA }))
		fNS2Sel := informers.NewSharedInformerFactoryWithContext(runCtx, wf, c.cs, 0, informers.WithNamespace(ns2),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ours }))
		defer func() {
			for _, f := range []*informers.Factory{fNS, fSel, fNS2Sel} {
				f.Shutdown() // the first shuts wf down, and with it every informer
			}
		}()
		scoped := []*scopedInformer{
			{name: "unscoped", namespaces: []string{ns, ns2}, inf: all},
			{name: "namespace", namespace: ns, namespaces: []string{ns}, inf: fNS.Core().V1().ConfigMaps().Informer()},
			{name: "selected", namespaces: []string{ns, ns2}, selector: tierA, inf: fSel.Core().V1().ConfigMaps().Informer()},
			{name: "namespace and selected", namespace: ns2, namespaces: []string{ns2}, selector: ours, inf: fNS2Sel.Core().V1().ConfigMaps().Informer()},
		}
		for _, f := range []*informers.Factory{fNS, fSel, fNS2Sel} {
			if fb := f.Fallbacks(); len(fb) != 0 {
				t.Fatalf("informers in memory: %v", fb)
			}
		}
		for _, s := range scoped {
			s.events = newRecorder()
			if _, err := s.inf.AddEventHandler(s.handler(t)); err != nil {
				t.Fatal(err)
			}
		}
		wf.Start(runCtx)
		for name, ok := range wf.WaitForCacheSync(runCtx) {
			if !ok {
				t.Fatalf("%s did not sync", name)
			}
		}
		// converged waits until each handler's view equals the server's,
		// then checks the listers (the first time, before any change,
		// with a hot tier full of what the later changes make stale).
		converged := func() {
			t.Helper()
			for _, s := range scoped {
				want := c.listScope(ctx, t, s.namespaces, s.selector)
				err := s.events.WaitFor(ctx, func(es []event) bool {
					return restrict(fold(state{}, es), s.namespaces).diff(want) == ""
				})
				if err != nil {
					t.Fatalf("%s: %v; its view differs from the server's: %s", s.name, err, restrict(fold(state{}, s.events.Events()), s.namespaces).diff(want))
				}
				checkListers(ctx, t, c, s, want)
			}
		}
		converged()
		during()
		converged()
		for _, s := range scoped {
			s.mu.Lock()
			for _, p := range s.problems {
				t.Errorf("%s: %s", s.name, p)
			}
			s.mu.Unlock()
		}
		return scoped
	}

	// The first run: cold, with the first round of churn while it runs.
	run(func() { scopeChurn(ctx, t, c, ns, ns2, 0) })
	// The second round while the informers are stopped.
	scopeChurn(ctx, t, c, ns, ns2, 12)
	between()
	second := run(func() {})
	for _, s := range second {
		// As after a cold start: the server's state in scope as the
		// initial list, then nothing (nothing changed after the start).
		initial, rest, err := split(s.events.Events())
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want := c.listScope(ctx, t, s.namespaces, s.selector)
		if d := restrict(initial, s.namespaces).diff(want); d != "" {
			t.Errorf("%s: the initial list differs from the server's state after the restart: %s", s.name, d)
		}
		if r := restrict(nil, s.namespaces).keep(rest); len(r) != 0 {
			t.Errorf("%s: %d events after the initial list, want none; the first %+v", s.name, len(r), r[0])
		}
		var id bolt.Identity
		switch s.name {
		case "unscoped":
			id = bolt.Identity{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}
		case "namespace":
			id = bolt.Identity{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Scope: store.Scope{Namespace: ns}}
		case "selected":
			id = bolt.Identity{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Scope: store.Scope{LabelSelector: canonicalSelector(t, tierA)}}
		default:
			id = bolt.Identity{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Scope: store.Scope{Namespace: ns2, LabelSelector: canonicalSelector(t, ours)}}
		}
		file := readCache(ctx, t, path, id)
		if d := restrict(file.items, s.namespaces).diff(want); d != "" {
			t.Errorf("%s: the cache file differs from the server's list: %s", s.name, d)
		}
	}
}

// scopeNames are the names of every ConfigMap the test creates.
func scopeNames() []string {
	var names []string
	for i := range scopeObjects {
		names = append(names, fmt.Sprintf("cm-%d", i))
	}
	for _, base := range []int{0, 12} {
		for i := range 3 {
			names = append(names, fmt.Sprintf("new-%d-%d", base, i))
		}
	}
	return names
}

// scopeLabels are the labels of object class cls (0: none, 1: tier a,
// 2: tier b), marked with the test's namespace ns.
func scopeLabels(ns string, cls int) map[string]string {
	switch cls {
	case 1:
		return map[string]string{"scope": ns, "tier": "a"}
	case 2:
		return map[string]string{"scope": ns, "tier": "b"}
	}
	return nil
}

func canonicalSelector(t *testing.T, s string) string {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel.String()
}

func createScopeCM(ctx context.Context, t *testing.T, c *cluster, ns, name string, ls map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ls}, Data: map[string]string{"v": "0"}}
	if _, err := c.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
}

// scopeChurn changes objects cm-<base> ... cm-<base+11> of both
// namespaces (base a multiple of 3: object i's class is i%3, see
// scopeLabels) and creates three: data updates of one object of each
// class, one updated twice, relabels into and out of the selectors,
// deletes of one of each class, and a delete and re-create under the same
// name with other labels.
func scopeChurn(ctx context.Context, t *testing.T, c *cluster, ns, ns2 string, base int) {
	t.Helper()
	for _, n := range []string{ns, ns2} {
		cms := c.cs.CoreV1().ConfigMaps(n)
		patch := func(i int, p string) {
			t.Helper()
			if _, err := cms.Patch(ctx, fmt.Sprintf("cm-%d", base+i), types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
				t.Fatalf("patch %s/cm-%d: %v", n, base+i, err)
			}
		}
		del := func(i int) {
			t.Helper()
			if err := cms.Delete(ctx, fmt.Sprintf("cm-%d", base+i), metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete %s/cm-%d: %v", n, base+i, err)
			}
		}
		for i := range 3 { // data updates: none, a, b
			patch(i, `{"data":{"v":"1"}}`)
		}
		patch(3, fmt.Sprintf(`{"metadata":{"labels":{"scope":%q,"tier":"a"}}}`, ns)) // none -> a: into both selectors
		patch(4, `{"metadata":{"labels":{"tier":"b"}}}`)                             // a -> b: out of tier=a
		patch(5, `{"metadata":{"labels":{"tier":"a"}}}`)                             // b -> a: into tier=a
		patch(7, `{"metadata":{"labels":{"scope":null}}}`)                           // a -> unmarked: out of both
		del(6)
		del(10)
		del(8)
		patch(11, `{"data":{"v":"1"}}`)
		patch(11, `{"data":{"v":"2"}}`)
		del(9)
		createScopeCM(ctx, t, c, n, fmt.Sprintf("cm-%d", base+9), scopeLabels(ns, 1))
		for i, cls := range []int{0, 1, 2} {
			createScopeCM(ctx, t, c, n, fmt.Sprintf("new-%d-%d", base, i), scopeLabels(ns, cls))
		}
	}
}

// listScope lists the ConfigMaps of namespaces with the label selector
// sel directly.
func (c *cluster) listScope(ctx context.Context, t *testing.T, namespaces []string, sel string) state {
	t.Helper()
	s := state{}
	for _, ns := range namespaces {
		l, err := c.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatalf("list configmaps of %s: %v", ns, err)
		}
		for i := range l.Items {
			s[ns+"/"+l.Items[i].Name] = l.Items[i].ResourceVersion
		}
	}
	return s
}

// restrict returns s (nil for none) restricted to namespaces: the test's
// part of an informer's view, on an apiserver shared with other tests.
func restrict(s state, namespaces []string) restricted {
	set := map[string]bool{}
	for _, ns := range namespaces {
		set[ns] = true
	}
	return restricted{namespaces: set, s: s}
}

// restricted is a state restricted to a set of namespaces, which also
// filters events.
type restricted struct {
	namespaces map[string]bool
	s          state
}

func (r restricted) in(key string) bool {
	ns, _, _ := strings.Cut(key, "/")
	return r.namespaces[ns]
}

// diff is the restricted state's diff with want (state.diff).
func (r restricted) diff(want state) string { return r.filtered().diff(want) }

// keep returns the events of the set's namespaces.
func (r restricted) keep(es []event) []event {
	var out []event
	for _, e := range es {
		if r.in(e.Key) {
			out = append(out, e)
		}
	}
	return out
}

// checkListers compares what s's listers answer with the apiserver's own
// lists of the same namespace and selector, for several selectors, and
// its indexes (the namespace index, and the tier index on the unscoped
// informer) with the server's lists of the same objects.
func checkListers(ctx context.Context, t *testing.T, c *cluster, s *scopedInformer, want state) {
	t.Helper()
	idx := s.inf.GetIndexer()
	warm := corelisters.NewConfigMapLister(idx)
	clientGo := clientlisters.NewConfigMapLister(idx)
	for _, sel := range []string{"", "tier=a", "tier!=a", "tier in (a,b)", "tier notin (b)", "tier", "!tier", "scope,tier!=b"} {
		ls, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		// The server's answer for the informer's scope and sel: its
		// selector and sel both hold.
		server := state{}
		for k, rv := range c.listScope(ctx, t, s.namespaces, sel) {
			if _, ok := want[k]; ok {
				server[k] = rv
			}
		}
		for _, ns := range s.namespaces {
			nsWant := restrict(server, []string{ns}).filtered()
			for name, l := range map[string]clientlisters.ConfigMapLister{"warmcache lister": warm, "client-go lister": clientGo} {
				got, err := l.ConfigMaps(ns).List(ls)
				if err != nil {
					t.Fatalf("%s: %s List(%q) in %s: %v", s.name, name, sel, ns, err)
				}
				if d := cmState(got).diff(nsWant); d != "" {
					t.Errorf("%s: %s List(%q) in %s differs from the server's list: %s", s.name, name, sel, ns, d)
				}
				if sel != "" {
					continue
				}
				for _, n := range scopeNames() {
					k := ns + "/" + n
					cm, err := l.ConfigMaps(ns).Get(n)
					switch rv, ok := nsWant[k]; {
					case !ok && !apierrors.IsNotFound(err):
						t.Errorf("%s: %s Get(%s) = %v, %v; want NotFound", s.name, name, k, cm, err)
					case ok && (err != nil || cm.ResourceVersion != rv):
						t.Errorf("%s: %s Get(%s) = %v, %v; want resourceVersion %s", s.name, name, k, cm, err, rv)
					}
				}
			}
		}
		for name, l := range map[string]clientlisters.ConfigMapLister{"warmcache lister": warm, "client-go lister": clientGo} {
			got, err := l.List(ls)
			if err != nil {
				t.Fatalf("%s: %s List(%q): %v", s.name, name, sel, err)
			}
			if d := restrict(cmState(got), s.namespaces).diff(server); d != "" {
				t.Errorf("%s: %s List(%q) differs from the server's list: %s", s.name, name, sel, d)
			}
		}
	}
	for _, ns := range s.namespaces {
		objs, err := idx.ByIndex(cache.NamespaceIndex, ns)
		if err != nil {
			t.Fatal(err)
		}
		if d := objState(objs).diff(restrict(want, []string{ns}).filtered()); d != "" {
			t.Errorf("%s: ByIndex(namespace, %s) differs from the server's list: %s", s.name, ns, d)
		}
	}
	if s.name != "unscoped" {
		return
	}
	for _, tier := range []string{"a", "b"} {
		objs, err := idx.ByIndex(tierIndex, tier)
		if err != nil {
			t.Fatal(err)
		}
		server := c.listScope(ctx, t, s.namespaces, "tier="+tier)
		if d := restrict(objState(objs), s.namespaces).diff(server); d != "" {
			t.Errorf("ByIndex(tier, %s) differs from the server's list: %s", tier, d)
		}
		keys, err := idx.IndexKeys(tierIndex, tier)
		if err != nil {
			t.Fatal(err)
		}
		got := state{}
		for _, k := range keys {
			got[k] = server[k]
		}
		if d := restrict(got, s.namespaces).diff(server); d != "" {
			t.Errorf("IndexKeys(tier, %s) differs from the server's list: %s", tier, d)
		}
	}
}

// filtered returns the part of the state in the set's namespaces.
func (r restricted) filtered() state {
	out := state{}
	for k, v := range r.s {
		if r.in(k) {
			out[k] = v
		}
	}
	return out
}

func cmState(cms []*corev1.ConfigMap) state {
	s := state{}
	for _, cm := range cms {
		s[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return s
}

func objState(objs []interface{}) state {
	s := state{}
	for _, o := range objs {
		cm := o.(*corev1.ConfigMap)
		s[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return s
}
