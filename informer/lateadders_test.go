package informer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// gatedStore holds Apply while its gate is armed, so that a test can keep
// the processing loop busy without it waiting on a handler; with fail
// set, Apply then returns that error.
type gatedStore struct {
	store.Store
	gate atomic.Pointer[chan struct{}]
	fail atomic.Pointer[error]
}

func (s *gatedStore) Apply(ctx context.Context, txns []cache.Transaction, rv string) error {
	if g := s.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := s.fail.Load(); err != nil {
		return *err
	}
	return s.Store.Apply(ctx, txns, rv)
}

// gatedHarness starts a test informer with opts on a gated memory store,
// relisted with objs at resourceVersion 10 and idle.
func gatedHarness(t *testing.T, opts Options, objs ...interface{}) (*gatedStore, *Informer, *harness) {
	t.Helper()
	st := &gatedStore{Store: newMemStore(t)}
	opts.Store = st
	inf := newTestInformer(t, opts)
	h := startHarness(t, inf)
	h.relist("10", objs...)
	h.waitIdle("11")
	return st, inf, h
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
// AddEventHandler returned. ErrStopped is not an error: adders still
// waiting when a test ends (it failed) return it once the informer stops.
func addAsync(t *testing.T, inf *Informer, handler cache.ResourceEventHandler) *atomic.Bool {
	var returned atomic.Bool
	go func() {
		if _, err := inf.AddEventHandler(handler); err != nil && !errors.Is(err, ErrStopped) {
			t.Errorf("AddEventHandler: %v", err)
		}
		returned.Store(true)
	}()
	return &returned
}

// fillLateList holds the processing loop (holdLoop) and adds
// maxLateWaiting handlers, which then wait for their replays, then n more
// on goroutines, and checks that those wait for room. It returns the
// registrations of the first maxLateWaiting, the flags of the others
// (addAsync) and the release of the loop.
func fillLateList(t *testing.T, h *harness, st *gatedStore, n int) ([]cache.ResourceEventHandlerRegistration, []*atomic.Bool, func()) {
	t.Helper()
	release := holdLoop(t, h, st)
	var regs []cache.ResourceEventHandlerRegistration
	for range maxLateWaiting {
		reg, err := h.inf.AddEventHandler(newRecorder())
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	var extra []*atomic.Bool
	for range n {
		extra = append(extra, addAsync(t, h.inf, newRecorder()))
	}
	synctest.Wait()
	for i, returned := range extra {
		if returned.Load() {
			t.Fatalf("handler %d beyond the %d waiting was added while the loop served none", i+1, maxLateWaiting)
		}
	}
	return regs, extra, release
}

// checkReturned fails the test unless every flag of added is set.
func checkReturned(t *testing.T, added []*atomic.Bool, why string) {
	t.Helper()
	for i, returned := range added {
		if !returned.Load() {
			t.Fatalf("handler %d still waits for room %s", i+1, why)
		}
	}
}

// Handlers added after Run return at once while fewer than maxLateWaiting
// wait for their replays; beyond that, an adder waits until the loop has
// served one, so that goroutines adding handlers without end pay for the
// replays they cause (client-go's TestSharedInformerHandlerAbuse stalled
// the watch without it). Every handler still gets its replay.
func TestAddersWaitForRoomInTheLateList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, inf, h := gatedHarness(t, Options{}, pod("a", "1"), pod("b", "2"))
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

// Removing a late handler not served yet makes room: an adder waiting for
// room goes on at once, while the loop is still busy.
func TestRemovingALateHandlerMakesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, inf, h := gatedHarness(t, Options{}, pod("a", "1"))
		regs, extra, release := fillLateList(t, h, st, 1)

		if err := inf.RemoveEventHandler(regs[0]); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		checkReturned(t, extra, "after a late handler was removed")
		if n := lateLen(inf); n != maxLateWaiting {
			t.Fatalf("late list holds %d handlers, want %d", n, maxLateWaiting)
		}
		release()
		h.waitIdle("21")
	})
}

// Adders do not wait while the loop waits to retry a failed write (a full
// disk): it serves no late handler until the write succeeds, which may
// take long, and a handler adding handlers must not stall with it.
func TestAddersDoNotWaitForAFailingStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, inf, h := gatedHarness(t, Options{ApplyBackoff: 10 * time.Second, ApplyBackoffCap: 10 * time.Second}, pod("a", "1"))
		_, extra, release := fillLateList(t, h, st, 3)

		fail := error(errDiskFull)
		st.fail.Store(&fail)
		release()
		synctest.Wait() // the loop waits to retry the write
		if inf.Err() == nil {
			t.Fatal("the write did not fail")
		}
		checkReturned(t, extra, "while the loop waits to retry a failed write")
		st.fail.Store(nil)
		h.waitIdle("21")
	})
}

// Adders waiting for room go on once the processing loop stops serving
// late handlers: when a store write fails for good, or when the informer
// stops.
func TestAddersGoOnWhenTheLoopEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(h *harness, st *gatedStore, release func())
	}{
		{"store closed", func(h *harness, st *gatedStore, release func()) {
			closed := fmt.Errorf("apply: %w", store.ErrClosed)
			st.fail.Store(&closed)
			release()
			<-h.done
		}},
		{"stopped", func(h *harness, st *gatedStore, release func()) {
			h.stop() // the held write returns with its context
			release()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, _, h := gatedHarness(t, Options{}, pod("a", "1"))
				_, extra, release := fillLateList(t, h, st, 3)

				tc.end(h, st, release)
				synctest.Wait()
				checkReturned(t, extra, "after the processing loop ended")
				h.stop()
			})
		})
	}
}

// Adders do not wait while a replay waits for the verdict of the store's
// file check, which may take as long as reading the file: a late
// handler's (with Options.WarmStartChanges, the stored objects are told
// at once) or the warm start's once caught up (by default).
func TestAddersDoNotWaitForTheFileCheck(t *testing.T) {
	for _, changes := range []bool{false, true} {
		t.Run(fmt.Sprintf("changes=%v", changes), func(t *testing.T) { testAddersDoNotWaitForTheFileCheck(t, changes) })
	}
}

func testAddersDoNotWaitForTheFileCheck(t *testing.T, changes bool) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemStore(t)
		if err := mem.Replace([]interface{}{pod("a", "1")}, "10"); err != nil {
			t.Fatal(err)
		}
		g := newGatedCheck(mem)
		inf := newTestInformer(t, Options{Store: g, WarmStartChanges: changes})
		h := startHarness(t, inf)
		first := newRecorder()
		if _, err := inf.AddEventHandler(first); err != nil {
			t.Fatal(err)
		}
		if !changes {
			synctest.Wait()
			h.must(h.q.MarkSynced(h.ctx))
		}
		synctest.Wait() // the replay waits for the check
		select {
		case <-g.entered:
		default:
			t.Fatal("the replay does not wait for the file check")
		}
		var added []*atomic.Bool
		recs := make([]*recorder, 2*maxLateWaiting)
		for i := range recs {
			recs[i] = newRecorder()
			added = append(added, addAsync(t, inf, recs[i]))
		}
		synctest.Wait()
		checkReturned(t, added, "while the loop waits for the file check")
		g.verdict <- nil
		h.waitIdle("11")
		synctest.Wait() // every late handler served: the loop waits in Pop
		for i, r := range append(recs, first) {
			if got := len(r.Snapshot()); got != 1 {
				t.Errorf("handler %d got %d notifications, want the replay of 1 object", i, got)
			}
		}
	})
}
