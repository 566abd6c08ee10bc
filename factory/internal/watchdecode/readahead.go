package watchdecode

import (
	"sync"
)

// Read-ahead. A consumer that falls behind its watch (an informer whose
// store or handlers are slower than the server) holds a backlog
// somewhere: in its own queue, in the stream, in the socket or in the
// server, which closes a watch it cannot send to for long. The stream
// reads the backlog ahead as raw frames, up to a budget of bytes, and
// decodes only a window of 2*GOMAXPROCS chunks ahead of the consumer.
// Raw frames cost about a third of the memory of the objects they decode
// to, and nothing for the collector to scan: a backlog held decoded, as
// client-go's DeltaFIFO holds it, makes the collector mark every queued
// object at each cycle, which costs a busy informer more CPU than its
// store.

const (
	// DefaultBudgetBytes is the size of the budget all of the process's
	// streams share unless given their own (negotiated.budget, tests).
	DefaultBudgetBytes = 64 << 20
	// floorBytes is what each stream reads ahead outside its budget, so
	// that streams whose consumers are stuck never leave another with
	// nothing read ahead: the streams together hold at most the budget
	// plus floorBytes each (plus one chunk for a frame larger than that).
	floorBytes = 1 << 20
)

// defaultBudget is shared by the streams of every Wrap.
var defaultBudget = NewBudget(DefaultBudgetBytes)

// A Budget bounds the bytes that the streams sharing it read ahead of
// their decode windows, on top of each stream's floor (1 MiB). A stream
// charges each chunk it reads ahead the capacity of the chunk's buffer
// (64 KiB, or one frame's size if larger) and gives it back when the
// chunk is handed to the decoders, or when the stream stops.
type Budget struct {
	limit, floor int64

	mu      sync.Mutex
	free    int64
	waiters map[chan<- struct{}]struct{} // told when bytes are given back
}

// NewBudget returns a budget of limit bytes (at least 0).
func NewBudget(limit int64) *Budget { return newBudget(limit, floorBytes) }

// newBudget returns a budget of limit bytes whose streams each read
// floor bytes ahead outside it.
func newBudget(limit, floor int64) *Budget {
	limit = max(limit, 0)
	return &Budget{limit: limit, floor: floor, free: limit, waiters: map[chan<- struct{}]struct{}{}}
}

// Free returns the bytes not taken.
func (b *Budget) Free() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free
}

// take takes n bytes if that many are free, and forgets wake; otherwise
// it registers wake (a channel of capacity 1) for a signal when bytes are
// next given back. Each stream waits on a channel of its own, which give
// signals from the goroutine of whichever stream gives bytes back: a
// channel created in a synctest bubble may not be used from outside it,
// so streams in different bubbles (tests) must not share a budget that
// can run out (each test bubble makes its own; the default one is not
// spent by tests).
func (b *Budget) take(n int64, wake chan<- struct{}) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= b.free {
		b.free -= n
		delete(b.waiters, wake)
		return true
	}
	b.waiters[wake] = struct{}{}
	return false
}

// cancel forgets wake, registered by a take of a stream that stopped
// waiting.
func (b *Budget) cancel(wake chan<- struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiters, wake)
}

// give gives back n bytes taken and signals the waiters.
func (b *Budget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	for w := range b.waiters {
		select {
		case w <- struct{}{}:
		default:
		}
		delete(b.waiters, w)
	}
}

// maxChunks is the most chunks a stream on b can hold read ahead: each
// costs at least chunkBytes, except the last one, which may be smaller
// (an error) or come in over the floor when nothing else is held.
func (b *Budget) maxChunks() int {
	return int((b.limit+b.floor)/chunkBytes) + 2
}

// queueRaw queues c read ahead, waiting while the stream holds more than
// its floor and the budget has no room for c. False if the stream was
// stopped.
func (s *stream) queueRaw(c *chunk) bool {
	var n int64
	if c.arena != nil && len(c.ends) > 0 {
		n = int64(max(cap(*c.arena), chunkBytes))
	}
	waited := false // wake may be registered with the budget
	for {
		held := s.held.Load()
		if held == 0 || held+n <= s.budget.floor {
			if waited {
				// Room in the floor: the budget must not keep wake,
				// which it would hold until its next give.
				s.budget.cancel(s.wake)
			}
			break
		}
		if s.budget.take(n, s.wake) {
			c.budgeted = n
			break
		}
		waited = true
		select {
		case <-s.wake:
		case <-s.done:
			s.budget.cancel(s.wake)
			return false
		}
	}
	c.cost = n
	s.held.Add(n)
	select {
	case s.raw <- c:
		return true
	case <-s.done:
		s.unhold(c)
		return false
	}
}

// unhold gives back what c held read ahead.
func (s *stream) unhold(c *chunk) {
	s.held.Add(-c.cost)
	s.budget.give(c.budgeted)
	c.cost, c.budgeted = 0, 0
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// forward hands the chunks read ahead to the consumer and the workers in
// order; dispatch waits while the decode window is full. Once the stream
// is stopped it gives back what the chunks left read ahead hold, until
// the reader ends.
func (s *stream) forward() {
	for c := range s.raw {
		s.unhold(c)
		if !s.dispatch(c) {
			break
		}
	}
	for c := range s.raw {
		s.unhold(c)
	}
}
