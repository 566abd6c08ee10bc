package hot

import "sync/atomic"

// Epoch is a DB's write epoch: it counts the write transactions that may
// change stored objects without telling the tier (all but a store's
// batches, which call Committed), and the ones under way. The zero Epoch
// is ready to use.
type Epoch struct {
	n       atomic.Uint64
	writing atomic.Int64
}

// Begin marks a write transaction under way: entries put before it are
// no longer fast, and no bulk read finds a part whole (Complete) until
// its End.
func (e *Epoch) Begin() {
	e.writing.Add(1)
	e.n.Add(1)
}

// End marks the write transaction Begin began as done, committed or not:
// entries put while it ran are no longer fast.
func (e *Epoch) End() {
	e.n.Add(1)
	e.writing.Add(-1)
}

// Load returns the epoch's count.
func (e *Epoch) Load() uint64 { return e.n.Load() }

// quiet returns the epoch's count if no write transaction is under way.
// It reads the writers before the count: a write that ended before
// (writing 0) has bumped the count already.
func (e *Epoch) quiet() (uint64, bool) {
	w := e.writing.Load()
	return e.n.Load(), w == 0
}
