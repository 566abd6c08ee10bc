package factory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/testenv"
	"github.com/warmcache/warmcache/reflector"
)

// upperHalf is the shard of replica 1 of 2.
const upperHalf = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"

// inLowerHalf reports whether uid hashes into lowerHalf, as
// kube-apiserver computes it.
func inLowerHalf(uid string) bool {
	return sharding.HashField(uid) < "8000000000000000"
}

// createConfigMaps creates configmaps in ns until each half of the uid
// hash space holds at least n of them, and returns their names by half.
func createConfigMaps(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, prefix string, n int) (lower, upper []string) {
	t.Helper()
	for i := 0; len(lower) < n || len(upper) < n; i++ {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", prefix, i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if inLowerHalf(string(cm.UID)) {
			lower = append(lower, cm.Name)
		} else {
			upper = append(upper, cm.Name)
		}
	}
	sort.Strings(lower)
	sort.Strings(upper)
	return lower, upper
}

// shardInformers returns a typed, a dynamic and a metadata-only informer
// of configmaps in ns and shard, each from a factory of its own, with ro
// as reflector options. The factories are shut down
// when the test ends.
func shardInformers(ctx context.Context, t *testing.T, env *testenv.Env, ns, shard string, ro reflector.Options) map[string]*informer.Informer {
	t.Helper()
	scope := Scope{Namespace: ns, Shard: shard}
	out := map[string]*informer.Informer{}
	for _, kind := range []string{"typed", "dynamic", "metadata"} {
		l := ktesting.NewLogger(t, ktesting.NewConfig())
		f, err := New(ctx, Options{RESTConfig: env.RestConfig(), Logger: &l, Informer: informer.Options{Reflector: ro}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := f.Shutdown(); err != nil {
				t.Error(err)
			}
		})
		var inf *informer.Informer
		switch kind {
		case "typed":
			inf, err = f.ForResource(ctx, configMapsGVR, "ConfigMap", scope)
		case "dynamic":
			inf, err = f.ForDynamic(ctx, configMapsGVR, scope)
		case "metadata":
			inf, err = f.ForMetadata(ctx, configMapsGVR, "ConfigMap", scope)
		}
		if err != nil {
			t.Fatal(err)
		}
		out[kind] = inf
	}
	return out
}

// startAll runs infs until the test ends.
func startAll(t *testing.T, infs map[string]*informer.Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for _, inf := range infs {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
}

// namesIn returns the sorted names in inf's store.
func namesIn(t *testing.T, inf *informer.Informer) []string {
	t.Helper()
	var names []string
	for _, o := range inf.GetStore().List() {
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.GetName())
	}
	sort.Strings(names)
	return names
}

// TestRealAPIServerShardIgnoredWithoutTheGate: kube-apiserver without the
// ShardedListAndWatch gate ignores the shard selector and lists every
// configmap; a sharded informer (typed, dynamic, metadata-only) reports
// ErrShardIgnored to its watch error handler, retries, never syncs and
// stores nothing. The same server watches every configmap too; the
// watches of the factory's sharded ListerWatchers pass on only the
// shard's.
func TestRealAPIServerShardIgnoredWithoutTheGate(t *testing.T) {
	t.Parallel()
	ctx, env := realAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(env.RestConfig())
	ns := env.Namespace(ctx, t, "shard-off")
	// Objects in both halves: the metadata-only check, by object, needs
	// one outside the shard to see that the server ignored it.
	createConfigMaps(ctx, t, cs, ns, "cm", 1)
	infs := shardInformers(ctx, t, env, ns, lowerHalf, reflector.Options{
		Backoff: &wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1},
	})
	errs := map[string][2]<-chan error{}
	for name, inf := range infs {
		s, o := shardErrors(t, inf)
		errs[name] = [2]<-chan error{s, o}
	}
	startAll(t, infs)
	for name, inf := range infs {
		t.Run(name, func(t *testing.T) {
			waitShardErrors(ctx, t, 2, errs[name][0], errs[name][1])
			if inf.HasSynced() {
				t.Error("synced on an unsharded list")
			}
			if names := namesIn(t, inf); len(names) != 0 {
				t.Errorf("the store holds %q", names)
			}
		})
	}
	t.Run("watch", func(t *testing.T) {
		watchOutsideTheShard(ctx, t, env, cs, ns)
	})
}

// watchOutsideTheShard opens a watch of configmaps in ns with each of the
// factory's sharded ListerWatchers (typed, dynamic, metadata-only) on a
// server without the ShardedListAndWatch gate, creates configmaps in
// both halves of the uid hash space, and checks that each watch passes
// on the ADDED events of the lower half's only, and logs what it drops.
func watchOutsideTheShard(ctx context.Context, t *testing.T, env *testenv.Env, cs kubernetes.Interface, ns string) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope{Namespace: ns, Shard: lowerHalf}
	typed, err := TypedListWatch(env.RestConfig(), nil, configMapsGVR, scope)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	lws := map[string]cache.ListerWatcher{
		"typed":    typed,
		"dynamic":  DynamicListWatch(dc, configMapsGVR, scope),
		"metadata": MetadataListWatch(mc, configMapsGVR, "ConfigMap", scope),
	}
	watches, logs := map[string]watch.Interface{}, map[string]func() []string{}
	for kind, lw := range lws {
		wctx, lines := logLines()
		w, err := cache.ToListerWatcherWithContext(lw).WatchWithContext(wctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watches[kind], logs[kind] = w, lines
	}
	// Created until the last one is in the lower half: once a watch sent
	// it, it has decided on every event before it.
	var lower, upper []string
	var last string
	for i := 0; len(lower) < 2 || len(upper) < 2 || last != lower[len(lower)-1]; i++ {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if inLowerHalf(string(cm.UID)) {
			lower = append(lower, cm.Name)
		} else {
			upper = append(upper, cm.Name)
		}
		last = cm.Name
	}
	for kind, w := range watches {
		t.Run(kind, func(t *testing.T) {
			var got []string
			for len(got) == 0 || got[len(got)-1] != last {
				select {
				case e, ok := <-w.ResultChan():
					if !ok {
						t.Fatalf("the watch ended after %q", got)
					}
					m, err := meta.Accessor(e.Object)
					if err != nil || e.Type != watch.Added {
						t.Fatalf("the watch sent %s %v", e.Type, e.Object)
					}
					got = append(got, m.GetName())
				case <-ctx.Done():
					t.Fatalf("the watch sent %q, not %s", got, last)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(lower) {
				t.Errorf("the watch sent %q, want the lower half's %q (the upper half's: %q)", got, lower, upper)
			}
			if l := logs[kind](); len(l) != 1 || !strings.Contains(l[0], "ShardedListAndWatch") {
				t.Errorf("logged %q, want one line naming the feature gate", l)
			}
		})
	}
}

// TestRealAPIServerShardedListAndWatch: against kube-apiserver with the
// ShardedListAndWatch gate (an environment of its own), the informers of
// two shards splitting the uid hash space each sync with their shard's
// configmaps only, listed and then watched: together they hold every
// configmap, and none is in both. It also records what the server sends:
// ShardInfo on a full-object list, none on a metadata-only list, and
// nothing of the shard on a WatchList's initial-events-end bookmark.
func TestRealAPIServerShardedListAndWatch(t *testing.T) {
	t.Parallel()
	ctx := needAPIServer(t)
	env, err := testenv.Start(ctx, t, testenv.Options{ExtraAPIServerArgs: []string{"--feature-gates=ShardedListAndWatch=true"}})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(env.RestConfig())
	ns := env.Namespace(ctx, t, "shard-on")
	lower, upper := createConfigMaps(ctx, t, cs, ns, "cm", 3)

	t.Run("what the server sends", func(t *testing.T) {
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: lowerHalf})
		if err != nil {
			t.Fatal(err)
		}
		if l.ShardInfo == nil || l.ShardInfo.Selector != lowerHalf {
			t.Errorf("a sharded list's ShardInfo is %+v, want selector %q", l.ShardInfo, lowerHalf)
		}
		mc, err := metadata.NewForConfig(env.RestConfig())
		if err != nil {
			t.Fatal(err)
		}
		ml, err := mc.Resource(configMapsGVR).Namespace(ns).List(ctx, metav1.ListOptions{ShardSelector: lowerHalf})
		if err != nil {
			t.Fatal(err)
		}
		if ml.ShardInfo != nil {
			t.Errorf("a metadata-only list now carries ShardInfo %+v: kube-apiserver 1.36 dropped it, and MetadataListWatch checks its objects instead", ml.ShardInfo)
		}
		if got := len(ml.Items); got != len(lower) {
			t.Errorf("the sharded metadata-only list holds %d objects, want %d", got, len(lower))
		}
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
			ShardSelector: lowerHalf, SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		added := 0
		for e := range w.ResultChan() {
			if e.Type == watch.Added {
				added++
				continue
			}
			if e.Type != watch.Bookmark {
				t.Fatalf("WatchList sent %s %v", e.Type, e.Object)
			}
			m, err := meta.Accessor(e.Object)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{metav1.InitialEventsAnnotationKey: "true"}
			if fmt.Sprint(m.GetAnnotations()) != fmt.Sprint(want) || len(m.GetLabels()) != 0 {
				t.Errorf("the initial-events-end bookmark carries annotations %v and labels %v, want only %v: something of the shard could be checked on a WatchList", m.GetAnnotations(), m.GetLabels(), want)
			}
			break
		}
		if added != len(lower) {
			t.Errorf("the sharded WatchList sent %d objects, want %d", added, len(lower))
		}
	})

	shards := map[string]map[string]*informer.Informer{
		"lower": shardInformers(ctx, t, env, ns, lowerHalf, reflector.Options{}),
		"upper": shardInformers(ctx, t, env, ns, upperHalf, reflector.Options{}),
	}
	for _, infs := range shards {
		startAll(t, infs)
		for kind, inf := range infs {
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatalf("the %s informer did not sync", kind)
			}
		}
	}
	check := func(lower, upper []string) {
		t.Helper()
		want := map[string][]string{"lower": lower, "upper": upper}
		for shard, infs := range shards {
			for kind, inf := range infs {
				var got []string
				err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
					got = namesIn(t, inf)
					return fmt.Sprint(got) == fmt.Sprint(want[shard]), nil
				})
				if err != nil {
					t.Fatalf("%s shard, %s informer: holds %q, want %q", shard, kind, got, want[shard])
				}
			}
		}
	}
	check(lower, upper)
	// Created after the sync: each reaches its shard's watch only.
	moreLower, moreUpper := createConfigMaps(ctx, t, cs, ns, "more", 2)
	check(sortedUnion(lower, moreLower), sortedUnion(upper, moreUpper))
}

func sortedUnion(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	sort.Strings(out)
	return out
}
