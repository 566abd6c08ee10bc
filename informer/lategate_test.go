package informer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
)

// pausingLW blocks its second LIST page until release is closed, closing
// waiting when it gets there.
type pausingLW struct {
	*fakesource.Endpoint
	pages   atomic.Int32
	waiting chan struct{}
	release chan struct{}
}

func (p *pausingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if p.pages.Add(1) == 2 {
		close(p.waiting)
		<-p.release
	}
	return p.Endpoint.ListWithContext(ctx, o)
}

// countAdds counts the adds it is told of.
type countAdds struct{ n atomic.Int64 }

func (c *countAdds) OnAdd(interface{}, bool)           { c.n.Add(1) }
func (c *countAdds) OnUpdate(interface{}, interface{}) {}
func (c *countAdds) OnDelete(interface{})              {}

func newGate(t *testing.T) *reflector.ListGate {
	t.Helper()
	// No pass ever stalls here: a wait that only Patience would end
	// shows as a hang.
	g, err := reflector.NewListGate(reflector.ListGateOptions{Slots: 1, Patience: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestLateHandlerDuringOwnRelist adds a handler while the informer's own
// relist holds the gate's only pass, with more pages to come than its
// queue holds: the loop asks for the late handler's pass and goes on
// popping the relist's pages, so the relist ends, gives its pass back,
// and the late handler is replayed the store. A loop that waited at the
// gate would leave the relist blocked on the full queue for good.
func TestLateHandlerDuringOwnRelist(t *testing.T) {
	names := make([]string, 600)
	for i := range names {
		names[i] = fmt.Sprintf("p%04d", i)
	}
	src := fakesource.NewForTest(t, fakesource.Options{DisableWatchCache: true}, testkit.Pods(names...)...)
	lw := &pausingLW{Endpoint: src.Endpoint(podGVK, ""), waiting: make(chan struct{}), release: make(chan struct{})}
	opts := Options{Store: newMemStore(t), BatchSize: 20, QueueCapacity: 40}
	opts.Reflector.ListGate = newGate(t)
	opts.Reflector.ListPageSize = 20
	opts.Reflector.UseWatchList = reflector.WatchListOff
	r := runInformer(t, lw, opts, &countAdds{})
	select {
	case <-lw.waiting: // the relist holds the pass, between two pages
	case <-time.After(testkit.Timeout()):
		t.Fatal("no second list page requested")
	}
	late := &countAdds{}
	reg, err := r.inf.AddEventHandler(late)
	if err != nil {
		t.Fatal(err)
	}
	close(lw.release)
	r.waitSynced(t)
	waitDone(t, "late handler", reg.HasSyncedChecker())
	if got := late.n.Load(); got != int64(len(names)) {
		t.Fatalf("late handler told of %d adds, want %d", got, len(names))
	}
}

// TestLateHandlerWaitsForPassNotEvents checks that a handler added while
// another holds the gate's only pass is replayed only once the pass is
// given back, and that meanwhile the informer's events still reach its
// other handlers.
func TestLateHandlerWaitsForPassNotEvents(t *testing.T) {
	src := fakesource.NewForTest(t, fakesource.Options{}, testkit.Pods("a", "b")...)
	g := newGate(t)
	opts := Options{Store: newMemStore(t)}
	opts.Reflector.ListGate = g
	first := &countAdds{}
	r := runInformer(t, src.Endpoint(podGVK, ""), opts, first)
	r.waitSynced(t)
	r.waitHandlersSynced(t)
	other, err := g.Enter(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	late := &countAdds{}
	reg, err := r.inf.AddEventHandler(late)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Add(testkit.Pod("c", "")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testkit.Timeout())
	for first.n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the first handler was told of %d adds, want 3: the events waited for the late handler's pass", first.n.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if reg.HasSynced() || late.n.Load() != 0 {
		t.Fatalf("late handler served (%d adds) while another held the only pass", late.n.Load())
	}
	other.Leave()
	waitDone(t, "late handler", reg.HasSyncedChecker())
	if got := late.n.Load(); got != 3 {
		t.Fatalf("late handler told of %d adds, want 3", got)
	}
}

// TestCaughtUpReplayGoesOnApplying checks that a warm start that caught up
// while another informer holds the gate's only pass goes on applying the
// watch's changes to the store, telling the handlers none of them, and
// replays the store as the initial list once the pass is given back: the
// informer is synced only then. A loop that waited at the gate would
// apply nothing meanwhile, and its own reflector's relist, needing the
// loop to pop its pages, would stall behind it.
func TestCaughtUpReplayGoesOnApplying(t *testing.T) {
	w := startWithheld(t)
	st, inf, rec, other, h := w.st, w.inf, w.rec, w.other, w.h
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "11")))
	h.must(h.q.MarkSynced(h.ctx))
	h.must(h.q.Update(h.ctx, testkit.Pod("b", "12")))
	h.waitIdle("13") // handled only if the loop goes on popping
	if rv, _, err := st.ResourceVersionOf("ns/b"); err != nil || rv != "12" {
		t.Fatalf("stored ns/b at %q (%v) while the replay waits for its pass, want 12", rv, err)
	}
	if got := rec.Snapshot(); len(got) != 0 || inf.HasSynced() {
		t.Fatalf("before the pass: told %v, synced %v; want nothing told and not synced", got, inf.HasSynced())
	}
	other.Leave()
	equalEvents(t, rec.WaitFor(t, 2), []event{"add ns/a@11 initial=true", "add ns/b@12 initial=true"})
	waitDone(t, "informer", inf.HasSyncedChecker())
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "14")))
	equalEvents(t, rec.WaitFor(t, 3)[2:], []event{"update ns/a@11 -> ns/a@14"})
}

// TestRelistDropsCaughtUpReplay checks that a relist begun while the
// caught-up warm start waits for its pass tells the handlers the server's
// state itself, as a cold start's list, and that the pass asked for is
// given back unused: the gate's only slot is free again once the other
// holder leaves.
func TestRelistDropsCaughtUpReplay(t *testing.T) {
	w := startWithheld(t)
	g, inf, rec, other, h := w.g, w.inf, w.rec, w.other, w.h
	h.must(h.q.MarkSynced(h.ctx))
	h.relist("20", testkit.Pod("a", "15"), testkit.Pod("c", "16"))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceEnd })
	waitDone(t, "informer", inf.HasSyncedChecker())
	equalEvents(t, rec.Snapshot(), []event{"add ns/a@15 initial=true", "add ns/c@16 initial=true"})
	other.Leave()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	pass, err := g.Enter(ctx, "after")
	if err != nil {
		t.Fatalf("the gate's slot was not given back after the relist: %v", err)
	}
	pass.Leave()
}

// TestCaughtUpReplayWaitsForOpenRelist gives the pass back while a relist
// is open: the caught-up replay does not run then (it would tell the
// handlers the store the relist is replacing, and the relist's adds would
// come after the informer synced); the relist, once committed, tells the
// handlers the server's state as the initial list, and the informer is
// synced only then.
func TestCaughtUpReplayWaitsForOpenRelist(t *testing.T) {
	w := startWithheld(t)
	g, inf, rec, other, h := w.g, w.inf, w.rec, w.other, w.h
	h.must(h.q.MarkSynced(h.ctx))
	h.must(h.q.BeginReplace(h.ctx))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindReplaceBegin })
	other.Leave()
	h.pushPage(testkit.Pod("a", "15"), testkit.Pod("c", "16"))
	if got := rec.Snapshot(); len(got) != 0 || inf.HasSynced() {
		t.Fatalf("during the relist: told %v, synced %v; want nothing told and not synced", got, inf.HasSynced())
	}
	h.endRelist("20")
	waitDone(t, "informer", inf.HasSyncedChecker())
	h.waitListenersIdle()
	equalEvents(t, rec.Snapshot(), []event{"add ns/a@15 initial=true", "add ns/c@16 initial=true"})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	pass, err := g.Enter(ctx, "after")
	if err != nil {
		t.Fatalf("the gate's slot was not given back: %v", err)
	}
	pass.Leave()
}

// withheld is a warm-started informer on a hand-driven queue: its store
// holds a@1 and b@2, complete at resourceVersion 10, withheld from its one
// handler (rec) until it catches up, and its gate's only pass is held by
// another (other).
type withheld struct {
	st    store.Store
	g     *reflector.ListGate
	inf   *Informer
	rec   *recorder
	other *reflector.ListPass
	h     *harness
}

func startWithheld(t *testing.T) withheld {
	t.Helper()
	st := newMemStore(t)
	if err := st.Replace([]interface{}{testkit.Pod("a", "1"), testkit.Pod("b", "2")}, "10"); err != nil {
		t.Fatal(err)
	}
	g := newGate(t)
	opts := Options{Store: st}
	opts.Reflector.ListGate = g
	inf := newTestInformer(t, opts)
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	other, err := g.Enter(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	return withheld{st: st, g: g, inf: inf, rec: rec, other: other, h: startHarness(t, inf)}
}
