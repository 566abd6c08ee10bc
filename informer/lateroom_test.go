package informer

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// gatedStore holds Apply while its gate is armed, so that a test can keep
// the processing loop busy without it waiting on a handler.
type gatedStore struct {
	store.Store
	gate atomic.Pointer[chan struct{}]
}

func (s *gatedStore) Apply(ctx context.Context, txns []cache.Transaction, rv string) error {
	if g := s.gate.Load(); g != nil {
		<-*g
	}
	return s.Store.Apply(ctx, txns, rv)
}

// holdLoop arms st's gate, queues a change and waits until the loop holds
// in its Apply; the returned func lets it go on.
func holdLoop(t *testing.T, h *harness, st *gatedStore) func() {
	t.Helper()
	g := make(chan struct{})
	st.gate.Store(&g)
	h.must(h.q.Add(h.ctx, pod("held", "20")))
	synctest.Wait()
	return func() { st.gate.Store(nil); close(g) }
}

// addAsync adds a handler on a goroutine; the returned flag is set once
// AddEventHandler returned.
func addAsync(t *testing.T, inf *Informer, handler cache.ResourceEventHandler) *atomic.Bool {
	var returned atomic.Bool
	go func() {
		if _, err := inf.AddEventHandler(handler); err != nil {
			t.Errorf("AddEventHandler: %v", err)
		}
		returned.Store(true)
	}()
	return &returned
}

// Handlers added after Run return at once while fewer than maxLateWaiting
// wait for their replays; beyond that, an adder waits until the loop has
// served one, so that goroutines adding handlers without end pay for the
// replays they cause (client-go's TestSharedInformerHandlerAbuse stalled
// the watch without it). Every handler still gets its replay.
func TestAddersWaitForRoomInTheLateList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gatedStore{Store: newMemStore(t)}
		inf := newTestInformer(t, Options{Store: st})
		h := startHarness(t, inf)
		h.relist("10", pod("a", "1"), pod("b", "2"))
		h.waitIdle("11")
		release := holdLoop(t, h, st)

		recs := make([]*recorder, maxLateWaiting+3)
		for i := range recs {
			recs[i] = newRecorder()
		}
		for _, r := range recs[:maxLateWaiting] {
			if _, err := inf.AddEventHandler(r); err != nil {
				t.Fatal(err)
			}
		}
		if n := lateLen(inf); n != maxLateWaiting {
			t.Fatalf("late list holds %d handlers, want %d", n, maxLateWaiting)
		}
		var extra []*atomic.Bool
		for _, r := range recs[maxLateWaiting:] {
			extra = append(extra, addAsync(t, inf, r))
		}
		synctest.Wait()
		for i, returned := range extra {
			if returned.Load() {
				t.Fatalf("handler %d beyond the %d waiting was added while the loop served none", i+1, maxLateWaiting)
			}
		}
		if n := lateLen(inf); n != maxLateWaiting {
			t.Fatalf("late list holds %d handlers while adders wait, want %d", n, maxLateWaiting)
		}

		release()
		synctest.Wait()
		for i, returned := range extra {
			if !returned.Load() {
				t.Fatalf("handler %d beyond the %d waiting not added once the loop served the others", i+1, maxLateWaiting)
			}
		}
		h.waitIdle("21")
		for i, r := range recs {
			if got := len(r.Snapshot()); got != 3 {
				t.Errorf("handler %d got %d notifications, want the replay of 3 objects", i, got)
			}
		}
	})
}

// An adder never waits for room while the loop itself waits on a handler:
// a handler that adds handlers from its callbacks would otherwise deadlock
// with a replay waiting for it. Here the loop waits on a late handler that
// does not return, and more than maxLateWaiting handlers are added
// meanwhile, all at once.
func TestAddersDoNotWaitForALoopWaitingOnAHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := newTestInformer(t, Options{ReplayPending: 1})
		h := startHarness(t, inf)
		h.relist("10", pod("a", "1"), pod("b", "2"), pod("c", "3"))
		h.waitIdle("11")

		blocker := newRecorder()
		blocker.Block = make(chan struct{})
		if _, err := inf.AddEventHandler(blocker); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the loop waits in the blocker's replay
		var added []*atomic.Bool
		for range 2 * maxLateWaiting {
			added = append(added, addAsync(t, inf, newRecorder()))
		}
		synctest.Wait()
		for i, returned := range added {
			if !returned.Load() {
				t.Fatalf("handler %d waited for a loop that waits on a handler", i)
			}
		}
		close(blocker.Block)
		h.waitIdle("12")
	})
}
