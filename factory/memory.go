package factory

import (
	"fmt"
	"math"
	"time"

	"github.com/warmcache/warmcache/factory/internal/watchdecode"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

// MinMemoryBudget is the smallest Options.MemoryBudget New accepts.
const MinMemoryBudget int64 = 32 << 20

// BudgetObjectBytes is the heap a decoded object is assumed to take when
// Options.MemoryBudget is turned into numbers of objects: a pod with its
// status takes about 15 KB, a small ConfigMap or custom resource a few.
// Resources of smaller objects stay further under the budget.
const BudgetObjectBytes int64 = 16 << 10

// listGatePatience is the Patience of the list gate MemoryBudget creates
// (0: reflector.DefaultListGatePatience); a variable for the tests.
var listGatePatience time.Duration

// memoryPlan is what Options.MemoryBudget sets: every field the user left
// at its default.
type memoryPlan struct {
	hotBytes       int64 // the file's hot tier (Bolt.HotBytes)
	replayHeadroom int64 // Bolt.ReplayHeadroom
	queueBudget    int   // QueueBudget, objects
	slots          int   // the list gate's slots
	readAhead      int64 // the watch streams' read-ahead, bytes
}

// planMemory splits budget bytes: a quarter to the hot tier, a quarter to
// the queues, a quarter to the relists and replays in flight (a page
// being collected and a batch being written each, which sets how many
// run at once), an eighth to the watch streams' read-ahead and an eighth
// to the replays' headroom for the collector (each at most its default).
func planMemory(budget int64, inf informer.Options) memoryPlan {
	page := inf.Reflector.ListPageSize
	if page == 0 {
		page = reflector.DefaultListPageSize
	}
	batch := int64(inf.BatchSize)
	if batch == 0 {
		batch = informer.DefaultBatchSize
	}
	quarter := budget / 4
	objects := quarter / BudgetObjectBytes
	return memoryPlan{
		hotBytes:       quarter,
		replayHeadroom: min(budget/8, bolt.DefaultReplayHeadroom),
		queueBudget:    int(min(objects, math.MaxInt32)),
		slots:          int(min(max(1, objects/(page+batch)), math.MaxInt32)),
		// At most the process's default: each stream sizes its chunk
		// queue from its budget.
		readAhead: min(budget/8, watchdecode.DefaultBudgetBytes),
	}
}

// applyMemoryBudget validates opts.MemoryBudget and fills the defaults it
// governs (the list gate in opts.Informer.Reflector); it returns the
// read-ahead budget the factory's clients share (nil without a memory
// budget).
func applyMemoryBudget(opts *Options) (*watchdecode.Budget, error) {
	b := opts.MemoryBudget
	switch {
	case b == 0:
		return nil, nil
	case b < MinMemoryBudget:
		return nil, fmt.Errorf("%w: MemoryBudget %d is below the minimum %d (%d MiB)", ErrInvalidOptions, b, MinMemoryBudget, MinMemoryBudget>>20)
	}
	p := planMemory(b, opts.Informer)
	if opts.Bolt.HotBytes == nil {
		opts.Bolt.HotBytes = &p.hotBytes
	}
	if opts.Bolt.ReplayHeadroom == nil {
		opts.Bolt.ReplayHeadroom = &p.replayHeadroom
	}
	if opts.QueueBudget == 0 {
		opts.QueueBudget = p.queueBudget
	}
	if opts.Informer.Reflector.ListGate == nil {
		gate, err := reflector.NewListGate(reflector.ListGateOptions{Slots: p.slots, Patience: listGatePatience, Metrics: opts.ListGateMetrics})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		opts.Informer.Reflector.ListGate = gate
	}
	return watchdecode.NewBudget(p.readAhead), nil
}

// ListGate returns the gate the factory's relists and replays share
// (Options.MemoryBudget's, or Options.Informer.Reflector.ListGate), nil
// when there is none.
func (f *Factory) ListGate() *reflector.ListGate { return f.opts.Informer.Reflector.ListGate }
