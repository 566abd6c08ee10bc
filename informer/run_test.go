package informer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/codec"
)

var errUndecodable = errors.New("undecodable payload")

// failOnceCodec fails the next left decodes of a payload containing needle
// (of any payload when needle is nil), as damaged items would, and decodes
// normally afterwards.
type failOnceCodec struct {
	codec.Codec
	needle []byte
	left   atomic.Int32
}

func (c *failOnceCodec) Decode(data []byte) (runtime.Object, error) {
	if bytes.Contains(data, c.needle) && c.left.Add(-1) >= 0 {
		return nil, errUndecodable
	}
	return c.Codec.Decode(data)
}

func TestCorruptionTriggersRelist(t *testing.T) {
	src := newSource(t, "a", "b", "c")
	inner, err := codec.For(nil, podGVK)
	if err != nil {
		t.Fatal(err)
	}
	bc := &failOnceCodec{Codec: inner}
	var infPtr atomic.Pointer[Informer]
	var reported atomic.Int32
	st, closeStore := openBolt(t, filepath.Join(t.TempDir(), "c.db"), bc, func(err error) {
		reported.Add(1)
		if inf := infPtr.Load(); inf != nil {
			inf.ReportCorruption(err)
		}
	})
	defer closeStore()
	rec := newRecorder()
	r := runInformer(t, src.Endpoint(podGVK, ""), Options{Store: st}, rec)
	infPtr.Store(r.inf)
	r.waitSynced(t)
	rec.WaitFor(t, 3)
	before := src.Stats()

	// The next decode, the informer reading a's stored object for the
	// update below, fails; the relist's own reads then succeed.
	bc.left.Store(1)
	a := getPod(t, src, "a")
	aOld := a.ResourceVersion
	a.Labels = map[string]string{"changed": "yes"}
	aNew := mustRV(t)(src.Update(a))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := src.WaitFor(ctx, func(s fakesource.Stats) bool {
		return s.Lists+s.WatchLists > before.Lists+before.WatchLists
	}); err != nil {
		t.Fatalf("no relist after the store found corrupt data: %v", err)
	}
	waitStoreMatches(t, st, src)
	got := rec.WaitFor(t, 4)
	if want := event("update ns/a@" + aOld + " -> ns/a@" + aNew); got[3] != want {
		t.Fatalf("after the relist got %q, want %q", got[3:], want)
	}
	if reported.Load() == 0 {
		t.Fatal("the store never reported the corruption")
	}
	if s, err := st.State(); err != nil || !s.Complete {
		t.Fatalf("state after the relist: %+v, %v", s, err)
	}
}

func TestResyncPerHandler(t *testing.T) {
	src := newSource(t, "a", "b")
	clk := testingclock.NewFakeClock(time.Now())
	inf, err := New(src.Endpoint(podGVK, ""), &corev1.Pod{}, Options{Store: newMemStore(t), Clock: clk, ResyncPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	syncing, quiet := newRecorder(), newRecorder()
	if _, err := inf.AddEventHandlerWithResyncPeriod(syncing, time.Second); err != nil {
		t.Fatal(err)
	}
	quietReg, err := inf.AddEventHandlerWithResyncPeriod(quiet, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	syncing.WaitFor(t, 2)
	quiet.WaitFor(t, 2)
	// The resync ticker may not be created yet: step until it fires.
	stepUntil(t, clk, func() bool { return len(syncing.Snapshot()) >= 4 })
	got := sortedEvents(syncing.Snapshot()[2:4])
	aRV, bRV := getPod(t, src, "a").ResourceVersion, getPod(t, src, "b").ResourceVersion
	equalEvents(t, got, []event{
		event(fmt.Sprintf("update ns/a@%s -> ns/a@%s", aRV, aRV)),
		event(fmt.Sprintf("update ns/b@%s -> ns/b@%s", bRV, bRV)),
	})
	// The quiet handler was offered the same distribution: once it is
	// idle, it must still have only its initial adds.
	l := quietReg.(*listener)
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return l.pending.Load() == 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := len(quiet.Snapshot()); n != 2 {
		t.Fatalf("handler without resync got %d events: %q", n, quiet.Snapshot())
	}
}

// stepUntil advances the fake clock a second at a time until cond holds.
func stepUntil(t *testing.T, clk *testingclock.FakeClock, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if cond() {
			return true, nil
		}
		if clk.HasWaiters() {
			clk.Step(time.Second)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("condition not reached: %v", err)
	}
}

func TestTypedListerOnBoltIndexer(t *testing.T) {
	src := newSource(t, "a", "b")
	other := testkit.Pod("x", "")
	other.Namespace = "other"
	if _, err := src.Add(other); err != nil {
		t.Fatal(err)
	}
	st, closeStore := openBolt(t, filepath.Join(t.TempDir(), "l.db"), nil, nil)
	defer closeStore()
	r := runInformer(t, src.Endpoint(podGVK, ""), Options{
		Store:    st,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	r.waitSynced(t)
	lister := corelisters.NewPodLister(r.inf.GetIndexer())
	p, err := lister.Pods("ns").Get("a")
	if err != nil || p.Name != "a" {
		t.Fatalf("Get: %v, %v", p, err)
	}
	pods, err := lister.Pods("ns").List(labels.Everything())
	if err != nil || len(pods) != 2 {
		t.Fatalf("List ns: %d pods, %v", len(pods), err)
	}
	all, err := lister.List(labels.Everything())
	if err != nil || len(all) != 3 {
		t.Fatalf("List: %d pods, %v", len(all), err)
	}
}

func TestTransformApplied(t *testing.T) {
	src := newSource(t, "a")
	inf, err := New(src.Endpoint(podGVK, ""), &corev1.Pod{}, Options{Store: newMemStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
		p := obj.(*corev1.Pod)
		p.Annotations = map[string]string{"transformed": "yes"}
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx.Done()) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	obj, ok, err := inf.GetStore().GetByKey("ns/a")
	if err != nil || !ok || obj.(*corev1.Pod).Annotations["transformed"] != "yes" {
		t.Fatalf("stored object not transformed: %v %v %v", obj, ok, err)
	}
	if inf.LastSyncResourceVersion() == "" {
		t.Fatal("no LastSyncResourceVersion after sync")
	}
	if !inf.GetController().HasSynced() {
		t.Fatal("controller view not synced")
	}
}

// TestWarmStartReplayFailsMidway: the warm-start replay stops at an item
// the store cannot decode. The informer relists; the handler gets the
// keys it was not replayed as initial adds, never a key twice, and the
// informer is synced only after that relist.
func TestWarmStartReplayFailsMidway(t *testing.T) {
	// The store decodes chunks of 256 objects: put the damaged one in the
	// second chunk, so that the replay stops midway.
	names := []string{}
	for i := 0; i < 300; i++ {
		names = append(names, fmt.Sprintf("a%03d", i))
	}
	src := newSource(t, append(names, "victim", "z")...)
	path, inner := writeFile(t, src)

	fc := &failOnceCodec{Codec: inner, needle: []byte("victim")}
	fc.left.Store(1)
	var infPtr atomic.Pointer[Informer]
	st, closeStore := openBolt(t, path, fc, func(err error) {
		if inf := infPtr.Load(); inf != nil {
			inf.ReportCorruption(err)
		}
	})
	defer closeStore()
	rec := newRecorder()
	inf := newInformer(t, src.Endpoint(podGVK, ""), Options{Store: st})
	infPtr.Store(inf)
	r := startInformer(t, inf, rec)
	defer r.stop() // before the store closes
	r.waitHandlersSynced(t)
	// Every key exactly once, as an initial add: the first chunk from the
	// replay, which stopped at the damaged item, the rest from the relist
	// (a relist that re-added everything would repeat the first chunk, one
	// that diffed only by resourceVersion would miss the rest).
	got := rec.Snapshot()
	var want []event
	for _, name := range append(names, "victim", "z") {
		want = append(want, event("add ns/"+name+"@"+getPod(t, src, name).ResourceVersion+" initial=true"))
	}
	equalEvents(t, sortedEvents(got), sortedEvents(want))

	if s := src.Stats(); s.Lists+s.WatchLists != 3 {
		t.Fatalf("%d lists, want 3 (the cold start, the warm start's resume check and the relist)", s.Lists+s.WatchLists)
	}
}
