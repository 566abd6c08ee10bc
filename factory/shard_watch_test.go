package factory

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// chanWatch is a watch whose events are those sent on ch; it counts its
// Stops and never closes ch itself.
type chanWatch struct {
	ch    chan watch.Event
	stops atomic.Int32
}

func (w *chanWatch) Stop()                          { w.stops.Add(1) }
func (w *chanWatch) ResultChan() <-chan watch.Event { return w.ch }

// logLines returns a context whose logger records its lines, and the
// lines recorded so far.
func logLines() (context.Context, func() []string) {
	var mu sync.Mutex
	var lines []string
	l := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{})
	return klog.NewContext(context.Background(), l), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// drain reads w's events until its result channel closes.
func drain(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var got []watch.Event
	// A bound for a stream that never ends, not a measure: 1,500 JSON
	// events decoded under -race took 28 s on two loaded cores.
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			got = append(got, e)
		case <-timeout:
			t.Fatalf("the result channel is still open after %d events", len(got))
		}
	}
}

// describeEvents formats events as "TYPE name".
func describeEvents(es []watch.Event) []string {
	var out []string
	for _, e := range es {
		name := ""
		if m, err := meta.Accessor(e.Object); err == nil {
			name = m.GetName()
		} else if s, ok := e.Object.(*metav1.Status); ok {
			name = s.Message
		}
		out = append(out, string(e.Type)+" "+name)
	}
	return out
}

// TestShardEventFilter: a watch of a sharded ListerWatcher passes on the
// ADDED, MODIFIED and DELETED events of objects inside the shard, drops
// those of objects outside it (logging the first, once, with the shard
// and the feature gate), passes BOOKMARK and ERROR events untouched, and
// closes its result channel when the underlying one closes; for typed,
// unstructured and metadata-only objects alike.
func TestShardEventFilter(t *testing.T) {
	lower, upper := uidsByHalf(4)
	kinds := []struct {
		name string
		obj  func(name string, uid types.UID) runtime.Object
	}{
		{"typed", func(name string, uid types.UID) runtime.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
		}},
		{"unstructured", func(name string, uid types.UID) runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("ConfigMap")
			u.SetNamespace("ns")
			u.SetName(name)
			u.SetUID(uid)
			return u
		}},
		{"metadata-only", func(name string, uid types.UID) runtime.Object {
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			in := []watch.Event{
				{Type: watch.Added, Object: k.obj("in-added", lower[0])},
				{Type: watch.Added, Object: k.obj("out-added", upper[0])},
				{Type: watch.Modified, Object: k.obj("out-modified", upper[1])},
				{Type: watch.Modified, Object: k.obj("in-modified", lower[1])},
				{Type: watch.Deleted, Object: k.obj("out-deleted", upper[2])},
				{Type: watch.Deleted, Object: k.obj("in-deleted", lower[2])},
				{Type: watch.Bookmark, Object: k.obj("bookmark", upper[3])},
				{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Message: "gone", Code: 410}},
				{Type: watch.Added, Object: k.obj("in-added-2", lower[3])},
			}
			inner := &chanWatch{ch: make(chan watch.Event, len(in))}
			for _, e := range in {
				inner.ch <- e
			}
			close(inner.ch)
			ctx, lines := logLines()
			w, err := newShardEventFilter(lowerHalf).watch(ctx)(inner, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, w)
			want := []string{"ADDED in-added", "MODIFIED in-modified", "DELETED in-deleted", "BOOKMARK bookmark", "ERROR gone", "ADDED in-added-2"}
			if fmt.Sprint(describeEvents(got)) != fmt.Sprint(want) {
				t.Errorf("events %q, want %q", describeEvents(got), want)
			}
			for i, wi := range []int{0, 3, 5, 6, 7, 8} {
				if i < len(got) && got[i].Object != in[wi].Object {
					t.Errorf("event %d's object was replaced", i)
				}
			}
			l := lines()
			if len(l) != 1 {
				t.Fatalf("logged %q, want one line", l)
			}
			for _, s := range []string{lowerHalf, "ShardedListAndWatch", "out-added", string(upper[0])} {
				if !strings.Contains(l[0], s) {
					t.Errorf("the log line %q does not name %q", l[0], s)
				}
			}
			w.Stop()
			w.Stop()
			if n := inner.stops.Load(); n != 1 {
				t.Errorf("the underlying watch was stopped %d times, want 1", n)
			}
		})
	}
}

// TestShardEventFilterStop: Stop ends a watch whose goroutine holds an
// event nobody reads, closes its result channel and stops the underlying
// watch once, however many times it is called and from which goroutines.
func TestShardEventFilterStop(t *testing.T) {
	lower, _ := uidsByHalf(1)
	inner := &chanWatch{ch: make(chan watch.Event)}
	w, err := newShardEventFilter(lowerHalf).watch(context.Background())(inner, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w == watch.Interface(inner) {
		t.Fatal("the watch of a shard is not filtered")
	}
	// Received by the watch's goroutine, which then waits to send it.
	inner.ch <- watch.Event{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: lower[0]}}}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(w.Stop)
	}
	wg.Wait()
	if got := drain(t, w); len(got) > 1 {
		t.Errorf("got %d events after Stop", len(got))
	}
	if n := inner.stops.Load(); n != 1 {
		t.Errorf("the underlying watch was stopped %d times, want 1", n)
	}
}

// TestShardEventFilterNothingToCheck: without a shard, or with a selector
// parseShard does not read, a watch is passed on as it is, as is an
// error.
func TestShardEventFilterNothingToCheck(t *testing.T) {
	for _, shard := range []string{"", "(" + lowerHalf + ")"} {
		inner := &chanWatch{ch: make(chan watch.Event)}
		if w, err := newShardEventFilter(shard).watch(context.Background())(inner, nil); w != watch.Interface(inner) || err != nil {
			t.Errorf("shard %q: the watch is %T, %v; want the underlying one", shard, w, err)
		}
	}
	boom := fmt.Errorf("boom")
	if w, err := newShardEventFilter(lowerHalf).watch(context.Background())(nil, boom); w != nil || err != boom {
		t.Errorf("a failed watch is %v, %v; want nil, %v", w, err, boom)
	}
}

// TestListWatchesDropWatchEventsOutsideTheShard: the watches of each
// ListerWatcher the factory builds for a sharded scope (typed in JSON and
// protobuf, dynamic, metadata-only), and of one given to InformerFor
// (shardChecked), drop the events a server that ignored the shard
// selector sends of objects outside the shard, and pass on the others.
func TestListWatchesDropWatchEventsOutsideTheShard(t *testing.T) {
	lower, upper := uidsByHalf(2)
	cm := func(name string, uid types.UID) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, ResourceVersion: "11"}}
	}
	events := []shardServerEvent{
		{watch.Added, cm("out-added", upper[0])},
		{watch.Added, cm("in-added", lower[0])},
		{watch.Modified, cm("out-modified", upper[1])},
		{watch.Modified, cm("in-modified", lower[1])},
		{watch.Deleted, cm("out-deleted", upper[0])},
		{watch.Deleted, cm("in-deleted", lower[0])},
		{watch.Bookmark, cm("bookmark", upper[1])},
	}
	want := []string{"ADDED in-added", "MODIFIED in-modified", "DELETED in-deleted", "BOOKMARK bookmark"}
	all := []string{"ADDED out-added", "ADDED in-added", "MODIFIED out-modified", "MODIFIED in-modified", "DELETED out-deleted", "DELETED in-deleted", "BOOKMARK bookmark"}
	scope := Scope{Namespace: "ns", Shard: lowerHalf}
	for _, tc := range []struct {
		name string
		new  func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error)
	}{
		{"typed JSON", func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
			return TypedListWatch(cfg, nil, configMapsGVR, scope)
		}},
		{"typed protobuf", func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
			cfg.ContentType = "application/vnd.kubernetes.protobuf"
			return TypedListWatch(cfg, nil, configMapsGVR, scope)
		}},
		{"dynamic", func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
			c, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			return DynamicListWatch(c, configMapsGVR, scope), nil
		}},
		{"metadata", func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
			c, err := metadata.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			return MetadataListWatch(c, configMapsGVR, "ConfigMap", scope), nil
		}},
		{"given to InformerFor", func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
			// A ListerWatcher of this package without the shard, which
			// shardChecked wraps as InformerFor does.
			unsharded := scope
			unsharded.Shard = ""
			lw, err := TypedListWatch(cfg, nil, configMapsGVR, unsharded)
			if err != nil {
				return nil, err
			}
			return shardChecked(lw, scope.Shard, false), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&shardServer{events: events})
			defer srv.Close()
			for _, sc := range []struct {
				scope Scope
				want  []string
			}{{scope, want}, {Scope{Namespace: "ns"}, all}} {
				lw, err := tc.new(&rest.Config{Host: srv.URL}, sc.scope)
				if err != nil {
					t.Fatal(err)
				}
				ctx, lines := logLines()
				w, err := cache.ToListerWatcherWithContext(lw).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "10"})
				if err != nil {
					t.Fatal(err)
				}
				got := describeEvents(drain(t, w))
				w.Stop()
				if fmt.Sprint(got) != fmt.Sprint(sc.want) {
					t.Errorf("shard %q: events %q, want %q", sc.scope.Shard, got, sc.want)
				}
				if l := lines(); sc.scope.Shard != "" && (len(l) != 1 || !strings.Contains(l[0], "ShardedListAndWatch")) {
					t.Errorf("logged %q, want one line naming the feature gate", l)
				}
			}
		})
	}
}
