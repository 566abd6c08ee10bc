package factory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/handlertest"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

// fakeShardLW is a ListerWatcher of configmaps that answers each list
// with page(options) and each watch with a watch that sends events and
// stays open. It records the options of every request.
type fakeShardLW struct {
	page   func(metav1.ListOptions) *corev1.ConfigMapList
	events []watch.Event

	mu      sync.Mutex
	lists   []metav1.ListOptions
	watches []metav1.ListOptions
}

func (f *fakeShardLW) lw() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			f.mu.Lock()
			f.lists = append(f.lists, o)
			f.mu.Unlock()
			return f.page(o), nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			f.mu.Lock()
			f.watches = append(f.watches, o)
			f.mu.Unlock()
			w := watch.NewFakeWithChanSize(len(f.events), false)
			for _, e := range f.events {
				w.Action(e.Type, e.Object.DeepCopyObject())
			}
			return w, nil
		},
	}
}

func (f *fakeShardLW) requests() (lists, watches []metav1.ListOptions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metav1.ListOptions(nil), f.lists...), append([]metav1.ListOptions(nil), f.watches...)
}

// configMapList returns a list of configmaps ns/<name> with uids, echoing
// shard in ShardInfo unless it is "", continued by cont.
func configMapList(shard, cont string, items map[string]types.UID) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10", Continue: cont}}
	if shard != "" {
		l.ShardInfo = &metav1.ShardInfo{Selector: shard}
	}
	for name, uid := range items {
		l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, ResourceVersion: "5"}})
	}
	return l
}

// shardFactory returns a factory whose informers retry at once (a backoff
// of a millisecond) and list pages of one object.
func shardFactory(t *testing.T, path string) *Factory {
	t.Helper()
	l := ktesting.NewLogger(t, ktesting.NewConfig())
	f, err := New(context.Background(), Options{
		Path:   path,
		Bolt:   bolt.Options{Sync: bolt.UnsafeNoSync},
		Logger: &l,
		Informer: informer.Options{Reflector: reflector.Options{
			ListPageSize: 1,
			Backoff:      &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// shardInformer returns the informer of the ConfigMaps of namespace ns in
// the lower half of the shards, listed and watched through fake, with a
// recorder of its events.
func shardInformer(ctx context.Context, t *testing.T, f *Factory, fake *fakeShardLW) (*informer.Informer, *handlertest.Recorder) {
	t.Helper()
	inf, err := f.InformerFor(ctx, configMapsGVR, &corev1.ConfigMap{}, fake.lw(), Scope{Namespace: "ns", Shard: lowerHalf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	return inf, rec
}

// shardErrors sets inf's watch error handler and returns a channel of
// the ErrShardIgnored errors it gets, and one of every other error.
func shardErrors(t *testing.T, inf *informer.Informer) (shard, other <-chan error) {
	t.Helper()
	s, o := make(chan error, 1000), make(chan error, 1000)
	err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		c := o
		if errors.Is(err, ErrShardIgnored) {
			c = s
		}
		select {
		case c <- err:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, o
}

// waitShardErrors waits for n ErrShardIgnored errors and fails on any
// other error.
func waitShardErrors(ctx context.Context, t *testing.T, n int, shard, other <-chan error) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case err := <-shard:
			t.Logf("list error: %v", err)
		case err := <-other:
			t.Fatalf("list or watch error %v, want ErrShardIgnored", err)
		case <-ctx.Done():
			t.Fatalf("saw %d ErrShardIgnored errors, want %d", i, n)
		}
	}
}

// TestShardedInformerNeverSyncsOnAnUnshardedList: a sharded informer
// whose lists come back without the shard's ShardInfo (the whole
// collection, or a later page of it) reports ErrShardIgnored to its watch
// error handler, retries, never syncs, never watches, and no object of an
// unchecked answer reaches its store or handlers. The objects of a
// checked first page may, told once: a cold start fills the store page
// by page, as client-go's informer fills its indexer, and whether the
// first page is filled before the second fails is a race. With the
// shard's ShardInfo it syncs, and it never streams a WatchList, whose
// initial events carry no ShardInfo.
func TestShardedInformerNeverSyncsOnAnUnshardedList(t *testing.T) {
	lower, upper := uidsByHalf(1)
	both := map[string]types.UID{"a": lower[0], "b": upper[0]}
	for _, tc := range []struct {
		name string
		page func(metav1.ListOptions) *corev1.ConfigMapList
		// checked is the key of a checked page's object, which the
		// store and handlers may hold; "" for none.
		checked string
	}{
		{"no ShardInfo", func(metav1.ListOptions) *corev1.ConfigMapList {
			return configMapList("", "", both)
		}, ""},
		{"another shard", func(metav1.ListOptions) *corev1.ConfigMapList {
			return configMapList("shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')", "", both)
		}, ""},
		{"second page without ShardInfo", func(o metav1.ListOptions) *corev1.ConfigMapList {
			if o.Continue == "" {
				return configMapList(lowerHalf, "next", map[string]types.UID{"a": lower[0]})
			}
			return configMapList("", "", map[string]types.UID{"b": upper[0]})
		}, "ns/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			f := shardFactory(t, "")
			fake := &fakeShardLW{page: tc.page}
			inf, rec := shardInformer(ctx, t, f, fake)
			shard, other := shardErrors(t, inf)
			f.Start(ctx)
			waitShardErrors(ctx, t, 3, shard, other)
			if inf.HasSynced() {
				t.Error("the informer synced on an unsharded list")
			}
			if keys := inf.GetStore().ListKeys(); len(keys) > 1 || len(keys) == 1 && keys[0] != tc.checked {
				t.Errorf("the store holds %q", keys)
			}
			if ev := rec.Snapshot(); len(ev) > 1 || len(ev) == 1 && !strings.HasPrefix(string(ev[0]), "add "+tc.checked+"@") {
				t.Errorf("handlers got %q", ev)
			}
			if _, watches := fake.requests(); len(watches) != 0 {
				t.Errorf("the informer watched (%+v)", watches)
			}
		})
	}

	t.Run("the shard's ShardInfo", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		f := shardFactory(t, "")
		fake := &fakeShardLW{page: func(metav1.ListOptions) *corev1.ConfigMapList {
			return configMapList(lowerHalf, "", map[string]types.UID{"a": lower[0]})
		}}
		inf, _ := shardInformer(ctx, t, f, fake)
		_, other := shardErrors(t, inf)
		f.Start(ctx)
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("the informer did not sync on its shard's list")
		}
		select {
		case err := <-other:
			t.Fatalf("error %v", err)
		default:
		}
		if keys := inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "ns/a" {
			t.Errorf("the store holds %q, want ns/a", keys)
		}
		lists, watches := fake.requests()
		if len(lists) == 0 {
			t.Fatal("no list")
		}
		for _, w := range watches {
			if w.SendInitialEvents != nil {
				t.Errorf("a sharded informer streamed a WatchList (%+v)", w)
			}
		}
	})
}

// TestShardedWarmStartChecksTheShard: a warm start's resume check (one
// LIST of at most one object) is checked like any list: against a server
// that ignores the shard it fails with ErrShardIgnored and is retried,
// and the informer serves none of the stored objects and never syncs.
func TestShardedWarmStartChecksTheShard(t *testing.T) {
	lower, _ := uidsByHalf(1)
	path := filepath.Join(t.TempDir(), "f.db")
	run := func(echo string, check func(context.Context, *informer.Informer, *fakeShardLW, *handlertest.Recorder, <-chan error, <-chan error)) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		f := shardFactory(t, path)
		fake := &fakeShardLW{page: func(metav1.ListOptions) *corev1.ConfigMapList {
			return configMapList(echo, "", map[string]types.UID{"a": lower[0]})
		}}
		inf, rec := shardInformer(ctx, t, f, fake)
		shard, other := shardErrors(t, inf)
		f.Start(ctx)
		check(ctx, inf, fake, rec, shard, other)
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
	// A cold start against a server that shards fills the file.
	run(lowerHalf, func(ctx context.Context, inf *informer.Informer, _ *fakeShardLW, _ *handlertest.Recorder, _, _ <-chan error) {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("the cold start did not sync")
		}
	})
	// The warm start meets a server that ignores the shard.
	run("", func(ctx context.Context, inf *informer.Informer, fake *fakeShardLW, rec *handlertest.Recorder, shard, other <-chan error) {
		waitShardErrors(ctx, t, 3, shard, other)
		if inf.HasSynced() {
			t.Error("the warm start synced")
		}
		if ev := rec.Snapshot(); len(ev) != 0 {
			t.Errorf("handlers got %q from the file", ev)
		}
		lists, watches := fake.requests()
		for _, l := range lists {
			if l.ResourceVersion != "" || l.Continue != "" {
				t.Errorf("listed %+v, want only resume checks (one page, resourceVersion \"\")", l)
			}
		}
		if len(watches) != 0 {
			t.Errorf("the warm start watched (%+v)", watches)
		}
	})
}

// TestShardedInformerDropsWatchEventsOutsideTheShard: a sharded informer
// synced from its shard's list whose watch then sends other shards'
// events (a server without the gate behind the same address) never puts
// those objects in its store nor hands them to a handler, and still
// applies its own shard's events.
func TestShardedInformerDropsWatchEventsOutsideTheShard(t *testing.T) {
	lower, upper := uidsByHalf(2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cm := func(name string, uid types.UID, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, ResourceVersion: rv}}
	}
	f := shardFactory(t, filepath.Join(t.TempDir(), "f.db"))
	fake := &fakeShardLW{
		page: func(metav1.ListOptions) *corev1.ConfigMapList {
			return configMapList(lowerHalf, "", map[string]types.UID{"a": lower[0]})
		},
		events: []watch.Event{
			{Type: watch.Added, Object: cm("b", upper[0], "11")},
			{Type: watch.Modified, Object: cm("a", lower[0], "12")},
			{Type: watch.Modified, Object: cm("c", upper[1], "13")},
			{Type: watch.Deleted, Object: cm("b", upper[0], "14")},
			{Type: watch.Added, Object: cm("d", lower[1], "15")},
		},
	}
	inf, rec := shardInformer(ctx, t, f, fake)
	_, other := shardErrors(t, inf)
	f.Start(ctx)
	// Handlers are told in the order of the watch: once d is added, every
	// event before it was applied or dropped.
	got := rec.WaitFor(t, 3)
	equalEvents(t, got, []event{"add ns/a@5 initial=true", "update ns/a@5 -> ns/a@12", "add ns/d@15 initial=false"})
	if keys := sortedKeys(inf.GetStore().ListKeys()); fmt.Sprint(keys) != "[ns/a ns/d]" {
		t.Errorf("the store holds %q, want [ns/a ns/d]", keys)
	}
	select {
	case err := <-other:
		t.Errorf("watch error %v", err)
	default:
	}
}

func sortedKeys(keys []string) []string {
	sort.Strings(keys)
	return keys
}
