package watchdecode

import (
	"testing"
	"testing/synctest"
)

// TestQueueRawForgetsItsWait has a stream's reader wait for a budget
// another stream holds, then go on from its floor once its own forwarder
// moves a chunk, and wants the budget to forget the reader's wait: a
// budget held for long (a stuck consumer's) must not collect the wake
// channels of every stream that once waited on it.
func TestQueueRawForgetsItsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := newBudget(chunkBytes, 2*chunkBytes)
		if !budget.take(budget.limit, make(chan struct{}, 1)) {
			t.Fatal("could not take the whole budget")
		}
		s := &stream{
			raw:    make(chan *chunk, budget.maxChunks()),
			budget: budget,
			wake:   make(chan struct{}, 1),
			done:   make(chan struct{}),
		}
		defer close(s.done)
		for range 2 { // the floor
			if !s.queueRaw(rawChunk()) {
				t.Fatal("queueRaw of a chunk within the floor = false")
			}
		}
		queued := make(chan bool, 1)
		go func() { queued <- s.queueRaw(rawChunk()) }()
		synctest.Wait()
		if n := waiters(budget); n != 1 {
			t.Fatalf("%d waiters on the budget while the reader waits, want 1", n)
		}

		s.unhold(<-s.raw) // the forwarder moves a chunk: room in the floor
		if !<-queued {
			t.Fatal("queueRaw = false")
		}
		if n := waiters(budget); n != 0 {
			t.Errorf("%d waiters on the budget after the reader went on from its floor, want 0", n)
		}
		if got := s.held.Load(); got != 2*chunkBytes {
			t.Errorf("held %d, want %d", got, 2*chunkBytes)
		}
	})
}

// rawChunk returns a chunk of one frame, as the reader queues it.
func rawChunk() *chunk {
	c := newChunk()
	*c.arena = append(*c.arena, 'x')
	c.ends = append(c.ends, len(*c.arena))
	return c
}

func waiters(b *Budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}
