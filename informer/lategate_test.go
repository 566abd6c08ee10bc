package informer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/reflector"
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
