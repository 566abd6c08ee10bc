package e2e

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/informer/metrics"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

// The size of TestWarmStartCatchesUp: pods at the first stop, and the
// backlog made while the controller is down.
const (
	catchUpPods       = 2000
	catchUpCreates    = 1000
	catchUpUpdates    = 1000
	catchUpDeletes    = 500
	catchUpConfigMaps = 40 // the idle informer's objects
)

// TestWarmStartCatchesUp (invariant 7, a warm start is a cold start, only
// cheaper): informers on one cache file are stopped, a backlog of
// thousands of creates, updates and deletes is made, and they start again
// on the file. At the moment each informer reports synced, its store holds
// exactly what a paginated LIST taken after the backlog returns (names,
// resourceVersions, content), and its handler has been told exactly that
// state as the initial list, nothing else, then nothing more. An idle
// informer beside it (its resource unchanged, the cluster's
// resourceVersion moved on) syncs too, and so do the pods when they did
// not change. The warm start lists nothing but the resume check (for the
// pods, the version check's metadata pages), with or without the watch
// cache; without the watch cache (no bookmarks) and without the version
// check, and after a 410, it relists once.
func TestWarmStartCatchesUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// own, when set, are the flags of an apiserver of the test's own;
		// nil runs on the shared one.
		own  []string
		idle bool
		// between runs while the informers are stopped, after the
		// backlog.
		between func(context.Context, *testing.T, *cluster)
		// relist: the warm start relists (once); otherwise it lists
		// nothing but the resume check.
		relist bool
		// noBacklog: the pods do not change while the informers are
		// stopped (only the cluster's resourceVersion moves).
		noBacklog bool
		// versionCheckLimit is the reflectors' VersionCheckLimit (0:
		// the default, which checks the pods' versions).
		versionCheckLimit int
	}{
		{name: "one informer"},
		{name: "an idle informer beside", idle: true},
		{name: "idle pods", noBacklog: true},
		{name: "without the watch cache", own: []string{"--watch-cache=false"}, idle: true},
		{name: "without the watch cache or the version check", own: []string{"--watch-cache=false"}, idle: true, relist: true, versionCheckLimit: -1},
		{name: "410 at the warm start", own: []string{}, idle: true, relist: true, between: func(ctx context.Context, t *testing.T, c *cluster) {
			if err := c.env.RestartAPIServer(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := needEnv(t)
			var c *cluster
			var ns string
			if tc.own == nil {
				c, ns = sharedCluster(ctx, t, "catchup")
			} else {
				c = startCluster(ctx, t, tc.own...)
				ns = c.env.Namespace(ctx, t, "catchup")
			}
			c.createPods(ctx, t, ns, 0, catchUpPods)
			if tc.idle {
				createConfigMaps(ctx, t, c, ns, catchUpConfigMaps)
			}
			file := filepath.Join(t.TempDir(), "cache.db")

			first := runCatchUp(ctx, t, c, file, ns, catchUpWant(ctx, t, c, ns, tc.idle), tc.versionCheckLimit)
			for _, r := range first {
				if r.warm {
					t.Errorf("%s: the first run found a complete store in a new file", r.resource)
				}
			}
			if tc.noBacklog {
				// Another kind moves the cluster's resourceVersion, as
				// leases do every 10s.
				createConfigMaps(ctx, t, c, ns, 1)
			} else {
				before := c.listPods(ctx, t, ns)
				took := makeBacklog(ctx, t, c, ns, before)
				t.Logf("backlog of %d creates, %d updates and %d deletes made in %v", catchUpCreates, catchUpUpdates, catchUpDeletes, took.Round(time.Millisecond))
			}
			if tc.between != nil {
				tc.between(ctx, t, c)
			}
			want := catchUpWant(ctx, t, c, ns, tc.idle) // before counting: these LISTs are the test's
			lists := map[string]float64{}
			for _, res := range []string{"pods", "configmaps"} {
				lists[res] = c.listRequests(ctx, t, res, ns)
			}

			second := runCatchUp(ctx, t, c, file, ns, want, tc.versionCheckLimit)
			for _, r := range second {
				if !r.warm {
					t.Errorf("%s: the restart found no complete store in the file", r.resource)
				}
				n := c.listRequests(ctx, t, r.resource, ns) - lists[r.resource]
				switch {
				case !tc.relist && r.expired > 0:
					// The watch cache keeps a resource's history for
					// 75s at least, not more when it is busy: a backlog
					// slower than that (a loaded machine) is answered
					// with a 410, and the relist is right. Logged, so
					// that a run that never resumes shows.
					t.Logf("%s: the resumed watch got %v 410s (its history was gone); %v LIST requests", r.resource, r.expired, n)
				case !tc.relist && (n < 1 || n > resumeCheckLists(r.objects, tc.versionCheckLimit) || r.relists != 0):
					t.Errorf("%s: the apiserver served %v LIST requests and the informer relisted %v times during the warm start, want the resume check (at most %v) and none",
						r.resource, n, r.relists, resumeCheckLists(r.objects, tc.versionCheckLimit))
				case tc.relist && (n < 1 || n > 1+math.Ceil(float64(r.objects)/500)):
					// The resume check, and the relist: a WatchList
					// stream (not a LIST), or the pages of one LIST.
					t.Errorf("%s: the apiserver served %v LIST requests during the warm start, want the resume check and at most one relist", r.resource, n)
				}
				t.Logf("%s: warm start synced after %v (%d objects)", r.resource, r.synced.Round(time.Millisecond), r.objects)
			}
		})
	}
}

// resumeCheckLists is the most LIST requests of the resume check of a
// resource of n objects (the reflector's): one, or the version check's
// pages of objects' metadata (a quarter of the stored objects, at least
// 500 and at most 2,000: at most ceil(n/500), since the store may have
// held fewer objects than the server lists).
func resumeCheckLists(n, versionCheckLimit int) float64 {
	if versionCheckLimit < 0 || n <= 500 {
		return 1
	}
	return math.Ceil(float64(n) / 500)
}

// catchUpRun is what runCatchUp saw of one informer.
type catchUpRun struct {
	resource string
	warm     bool          // the store was complete when the informer was made
	synced   time.Duration // from the start to HasSynced
	objects  int
	// relists and expired are the informer's relists and 410 answers.
	relists, expired float64
}

// makeBacklog changes the pods of ns (before) as a busy cluster does while
// a controller is down, on 16 workers: catchUpCreates new pods,
// catchUpUpdates relabelled and catchUpDeletes deleted. It returns how
// long that took.
func makeBacklog(ctx context.Context, t *testing.T, c *cluster, ns string, before state) time.Duration {
	t.Helper()
	start := time.Now()
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if err := demo.CreatePods(ctx, c.cs, catchUpCreates, demo.PodOptions{Namespace: ns, First: 100000, Workers: 16}); err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= catchUpUpdates+catchUpDeletes || ctx.Err() != nil {
					return
				}
				ns, name, _ := strings.Cut(keys[i], "/")
				pods := c.cs.CoreV1().Pods(ns)
				var err error
				if i < catchUpUpdates {
					patch := fmt.Sprintf(`{"metadata":{"labels":{"e2e-backlog":"%d"}}}`, i)
					_, err = pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				} else {
					err = pods.Delete(ctx, name, *metav1.NewDeleteOptions(0))
				}
				if err != nil {
					t.Errorf("backlog: %s: %v", keys[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return time.Since(start)
}

// catchUpWant lists (in pages) the pods and, with idle, the ConfigMaps of
// ns: what runCatchUp's informers must hold and tell when they sync, by
// resource.
func catchUpWant(ctx context.Context, t *testing.T, c *cluster, ns string, idle bool) map[string]map[string]interface{} {
	t.Helper()
	want := map[string]map[string]interface{}{"pods": listPodObjects(ctx, t, c, ns)}
	if idle {
		want["configmaps"] = listConfigMapObjects(ctx, t, c, ns)
	}
	return want
}

// runCatchUp runs a pods informer (and, when want has ConfigMaps, a
// ConfigMaps informer) of namespace ns on file through the client-go
// factory switch, until each has synced, and checks what it holds and
// told its handler at that moment against want, paginated LISTs of the
// server (nothing changes the namespace meanwhile); it then stops them
// and checks their handlers were told nothing more.
func runCatchUp(ctx context.Context, t *testing.T, c *cluster, file, ns string, want map[string]map[string]interface{}, versionCheckLimit int) []catchUpRun {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	defer cancel()
	wantPods, wantCMs := want["pods"], want["configmaps"]
	idle := wantCMs != nil
	reg := prometheus.NewRegistry()
	set, err := metrics.New(reg, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := factory.New(ctx, factory.Options{Path: file, RESTConfig: c.config, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}, MetricsFor: set.For,
		Informer: informer.Options{Reflector: reflector.Options{VersionCheckLimit: versionCheckLimit}}})
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithContext(ctx, wf, c.cs, 0, informers.WithNamespace(ns))
	defer f.Shutdown()
	type watched struct {
		resource string
		inf      cache.SharedIndexInformer
		want     map[string]interface{}
		rec      recorder
		reg      cache.ResourceEventHandlerRegistration
		warm     bool
	}
	ws := []*watched{{resource: "pods", inf: f.Core().V1().Pods().Informer(), want: wantPods}}
	if idle {
		ws = append(ws, &watched{resource: "configmaps", inf: f.Core().V1().ConfigMaps().Informer(), want: wantCMs})
	}
	for _, w := range ws {
		w.warm = storeComplete(t, w.inf)
		w.rec = newRecorder()
		if w.reg, err = w.inf.AddEventHandler(w.rec); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	f.StartWithContext(ctx)
	runs := make([]catchUpRun, len(ws))
	told := make([]int, len(ws))
	// Each informer's time to synced, measured as it syncs.
	syncedAfter := make([]time.Duration, len(ws))
	var waits sync.WaitGroup
	for i, w := range ws {
		waits.Go(func() {
			if cache.WaitFor(ctx, "", w.inf.HasSyncedChecker()) {
				syncedAfter[i] = time.Since(start)
			}
		})
	}
	for i, w := range ws {
		if !cache.WaitFor(ctx, "", w.inf.HasSyncedChecker()) {
			t.Fatalf("%s did not sync", w.resource)
		}
		runs[i] = catchUpRun{resource: w.resource, warm: w.warm, objects: len(w.want)}
		// Synced means caught up: the store holds the server's state
		// now, the objects themselves included.
		if d := diffObjects(w.inf.GetStore().List(), w.want); d != "" {
			t.Errorf("%s: when the informer reported synced, its store differed from a LIST: %s", w.resource, d)
		}
		if !cache.WaitFor(ctx, "", w.reg.HasSyncedChecker()) {
			t.Fatalf("%s: the handler did not sync", w.resource)
		}
		events := w.rec.Events()
		told[i] = len(events)
		initial, rest, err := split(events)
		if err != nil {
			t.Fatalf("%s: %v", w.resource, err)
		}
		if d := initial.diff(stateOf(w.want)); d != "" {
			t.Errorf("%s: when the handler synced, its initial list differed from a LIST: %s", w.resource, d)
		}
		if len(rest) != 0 {
			t.Errorf("%s: %d events other than initial adds before the handler synced, the first %+v", w.resource, len(rest), rest[0])
		}
	}
	waits.Wait()
	for i := range runs {
		runs[i].synced = syncedAfter[i]
	}
	// Nothing changed after the start: a handler told anything more
	// (delivered before Shutdown returns) was told a state that was not
	// the server's.
	f.Shutdown()
	for i := range runs {
		runs[i].relists = counterOf(t, reg, "warmcache_informer_relists_total", runs[i].resource)
		runs[i].expired = counterOf(t, reg, "warmcache_informer_expired_total", runs[i].resource)
	}
	for i, w := range ws {
		if events := w.rec.Events(); len(events) != told[i] {
			t.Errorf("%s: %d events after the sync, want none; the first %+v", w.resource, len(events)-told[i], events[told[i]])
		}
	}
	return runs
}

// counterOf sums the counter name of the informers of resource (their
// names start with it) in reg.
func counterOf(t *testing.T, reg prometheus.Gatherer, name, resource string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "informer" && strings.HasPrefix(l.GetValue(), resource+"/") {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// storeComplete reports whether inf's store holds a complete state (a warm
// start), before it runs.
func storeComplete(t *testing.T, inf cache.SharedIndexInformer) bool {
	t.Helper()
	wi, ok := inf.(*informer.Informer)
	if !ok {
		t.Fatalf("the factory's informer is a %T, not warmcache's", inf)
	}
	st, err := wi.Store().State()
	if err != nil {
		t.Fatal(err)
	}
	return st.Complete
}

// stateOf maps objects (key -> object) to key -> resourceVersion.
func stateOf(objs map[string]interface{}) state {
	s := state{}
	for k, o := range objs {
		s[k] = objectRV(o)
	}
	return s
}

func objectRV(obj interface{}) string {
	m, err := metaOf(obj)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return m.GetResourceVersion()
}

func metaOf(obj interface{}) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// diffObjects describes how got differs from want (key -> object): keys,
// resourceVersions and content, "" when equal.
func diffObjects(got []interface{}, want map[string]interface{}) string {
	var out []string
	seen := map[string]bool{}
	for _, o := range got {
		k := keyOf(o)
		seen[k] = true
		w, ok := want[k]
		switch {
		case !ok:
			out = append(out, "phantom "+k+"@"+objectRV(o))
		case objectRV(o) != objectRV(w):
			out = append(out, fmt.Sprintf("stale %s@%s, server has %s", k, objectRV(o), objectRV(w)))
		case !equality.Semantic.DeepEqual(o, w):
			out = append(out, "content of "+k+" differs")
		}
	}
	for k, w := range want {
		if !seen[k] {
			out = append(out, "missing "+k+"@"+objectRV(w))
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... %d more", len(out)-10))
	}
	return strings.Join(out, "; ")
}

// listPodObjects lists the pods of ns in pages, as the objects.
func listPodObjects(ctx context.Context, t *testing.T, c *cluster, ns string) map[string]interface{} {
	t.Helper()
	out := map[string]interface{}{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := c.cs.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			t.Fatalf("list pods: %v", err)
		}
		for i := range l.Items {
			out[ns+"/"+l.Items[i].Name] = &l.Items[i]
		}
		if l.Continue == "" {
			return out
		}
		opts.Continue = l.Continue
	}
}

// listConfigMapObjects lists the ConfigMaps of ns in pages, as the objects.
func listConfigMapObjects(ctx context.Context, t *testing.T, c *cluster, ns string) map[string]interface{} {
	t.Helper()
	out := map[string]interface{}{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := c.cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			t.Fatalf("list configmaps: %v", err)
		}
		for i := range l.Items {
			out[ns+"/"+l.Items[i].Name] = &l.Items[i]
		}
		if l.Continue == "" {
			return out
		}
		opts.Continue = l.Continue
	}
}

// createConfigMaps creates n ConfigMaps in ns.
func createConfigMaps(ctx context.Context, t *testing.T, c *cluster, ns string, n int) {
	t.Helper()
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idle-%03d", i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := c.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
