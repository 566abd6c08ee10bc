package deltafifo

import (
	"fmt"
	"sync"
)

// BudgetMetrics receives a Budget's metrics. Its methods are called with
// the budget's lock held (and the lock of the queue that changed it), in
// the order of the changes they report: they must be fast and must not
// call the budget or a queue.
type BudgetMetrics interface {
	// Used reports the objects charged to the budget after every change,
	// with its limit. Used may exceed the limit by the pushes admitted
	// into empty queues and by each queue's floor (see Budget).
	Used(used, limit int)
	// Blocked counts pushes that had to wait for the budget (once per
	// push, however long it waited).
	Blocked()
}

// BudgetOptions configures NewBudget.
type BudgetOptions struct {
	// Limit is the number of queued deltas plus queued page objects that
	// the queues sharing the budget may hold together. Required: it must
	// be positive.
	Limit int
	// Metrics receives the budget's use. Default: no metrics.
	Metrics BudgetMetrics
}

// Budget bounds the number of objects queued in all the queues that share
// it (Options.Budget), on top of each queue's own Capacity: an informer
// factory gives one to all of its informers, so that the memory their
// queues hold does not grow with the number of informers.
//
// A queue is charged for its depth: a push takes from the budget what it
// adds to the queue's depth, a pop (or an aborted replace's dropped
// pages) gives it back, and Close gives back everything the queue holds.
// A push that does not fit in the budget blocks, like a push into a full
// queue, until another queue's pop, its own pop or Close frees enough, or
// its context is done.
//
// So that every queue always makes progress, whatever the others hold:
//
//   - a push into an empty queue is always admitted, even over the limit
//     (as a page larger than Capacity is): each queue may hold one push,
//     a delta or one page, whatever the budget. Used exceeds Limit by at
//     most one page per queue then; a producer blocked on a full budget
//     holds that page in its own memory anyway;
//   - beyond that, a queue may always hold a floor of 1/64 of the limit,
//     at most 64 objects (none for a limit under 64), whatever the others
//     hold: while other queues hold the budget (two whose consumers are
//     slow can hold all of it), its consumer still pops batches of watch
//     events rather than one event per store write. Used exceeds Limit by
//     at most that floor per queue then;
//   - a queue never holds more than half of the budget (except for that
//     one push into an empty queue and its floor), so one queue whose
//     consumer is stuck (a handler that never returns stalls its
//     informer's relists) leaves at least half of it to the others.
//
// A queue whose consumer is stopped for good keeps its share until it is
// closed: close every queue that shares a budget when its consumer stops
// (the informer does). Queues that wait for the budget are woken whenever
// it frees room under its limit; none is favoured, but none can wait forever while its own
// consumer pops, since its queue empties.
//
// All methods are safe for concurrent use.
type Budget struct {
	limit   int
	metrics BudgetMetrics

	// mu guards the fields below. It is taken with a queue's lock held,
	// never the other way round (lock order: Queue.mu, then Budget.mu).
	mu   sync.Mutex
	used int
	// freed, when not nil, is closed (and reset to nil) when used drops
	// below limit: pushes that wait for the budget wait on it. It is
	// created only when someone waits.
	freed chan struct{}
}

// NewBudget returns a budget configured by opts. It returns an error
// wrapping ErrInvalidArgument if opts.Limit is not positive.
func NewBudget(opts BudgetOptions) (*Budget, error) {
	if opts.Limit < 1 {
		return nil, fmt.Errorf("%w: budget Limit %d is not positive", ErrInvalidArgument, opts.Limit)
	}
	if opts.Metrics == nil {
		opts.Metrics = noBudgetMetrics{}
	}
	opts.Metrics.Used(0, opts.Limit)
	return &Budget{limit: opts.Limit, metrics: opts.Metrics}, nil
}

// Limit returns the budget's limit.
func (b *Budget) Limit() int { return b.limit }

// Used returns the number of objects charged to the budget: those queued
// in every queue that shares it and is not closed.
func (b *Budget) Used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take charges n objects to the budget for a queue that holds held of it
// and is empty if empty. It succeeds when the queue is empty, or when n
// fits in the budget and in the queue's share (half the limit). Otherwise
// it returns a channel closed when the budget frees something, to wait on.
func (b *Budget) take(n, held int, empty bool) (ok bool, freed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if empty || held+n <= b.floor() || (b.used+n <= b.limit && held+n <= b.share()) {
		b.used += n
		b.metrics.Used(b.used, b.limit)
		return true, nil
	}
	if b.freed == nil {
		b.freed = make(chan struct{})
	}
	return false, b.freed
}

// floor is what a queue may always hold, whatever the budget: enough for
// batches of watch events rather than one event per store write while
// other queues hold the budget (1/64 of the limit, at most 64 objects; 0
// for budgets under 64).
func (b *Budget) floor() int {
	return min(b.limit/64, 64)
}

// share is the most one queue may hold, but for one push into an empty
// queue and its floor.
func (b *Budget) share() int {
	return max(b.limit/2, 1)
}

// release gives n objects back to the budget. It wakes the waiting pushes
// only once one object fits under the limit: until then none can pass on
// what other queues freed (what its own queue frees wakes it through the
// queue's room).
func (b *Budget) release(n int) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.metrics.Used(b.used, b.limit)
	if b.freed != nil && b.used < b.limit {
		close(b.freed)
		b.freed = nil
	}
}

// blocked counts a push that waits for the budget.
func (b *Budget) blocked() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.metrics.Blocked()
}

type noBudgetMetrics struct{}

func (noBudgetMetrics) Used(int, int) {}
func (noBudgetMetrics) Blocked()      {}
