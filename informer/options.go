package informer

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
)

// Defaults of Options.
const (
	// DefaultBatchSize is the default Options.BatchSize.
	DefaultBatchSize = 500
	// DefaultQueueCapacity is the default Options.QueueCapacity: two
	// batches, one being applied while the next is queued.
	DefaultQueueCapacity = 2 * DefaultBatchSize
	// DefaultReplayPending is the default Options.ReplayPending.
	DefaultReplayPending = 1024
	// DefaultApplyBackoff and DefaultApplyBackoffCap are the defaults of
	// Options.ApplyBackoff and Options.ApplyBackoffCap.
	DefaultApplyBackoff    = 100 * time.Millisecond
	DefaultApplyBackoffCap = 30 * time.Second
	// minimumResyncPeriod is client-go's lower bound for handler resync
	// periods.
	minimumResyncPeriod = time.Second
)

// Options configures New. Store is required; every other field has a
// default.
type Options struct {
	// Store holds the informer's cache: a store/memory or store/bolt
	// store (required). The informer writes it and serves it as GetStore
	// and GetIndexer, but does not own it: it never closes it, and the
	// caller closes it after Run has returned. A store must serve one
	// informer only.
	Store store.Store

	// ResyncPeriod is the default resync period of handlers and the
	// informer's resync check period, as in client-go. Default 0: no
	// resync.
	ResyncPeriod time.Duration

	// Indexers are added to the store (AddIndexers) unless it has an index
	// of that name already. Open a bolt store with the same indexers
	// (bolt.ResourceOptions.Indexers, as package factory does): adding them
	// afterwards decodes every stored object, and a store opened with
	// another index set rebuilds its index entries. Default: none.
	Indexers cache.Indexers

	// ObjectDescription describes the objects in logs and in the
	// reflector. Default: derived from the example object.
	ObjectDescription string

	// Name names the informer in logs, metrics and HasSyncedChecker.
	// Default: ObjectDescription.
	Name string

	// Logger receives the informer's log lines. Default: the logger of
	// Run's context (klog.FromContext).
	Logger *klog.Logger

	// Metrics receives the informer's measurements (see Metrics and the
	// informer/metrics package for Prometheus). Default: none.
	Metrics Metrics

	// QueueCapacity bounds the queue between the reflector and the
	// informer (deltas plus listed objects, decoded); a full queue stalls
	// the watch. It bounds the memory of a relist: BenchmarkColdStartRelist
	// (50k realistic pods into bbolt) peaks at about 90 MB of heap with
	// 1000 and 370-400 MB with 10000, for the same throughput (21-23k
	// against 24k objects/s). A backlog of watch events beyond it waits
	// elsewhere: package factory's clients read it ahead as wire bytes
	// (up to 64 MiB for the whole process), a third of the memory of the
	// decoded objects and nothing for the collector to mark, which a
	// queue of decoded objects costs at every collection (informerbench's
	// churn at 100k pods: 12-13 µs of collector per update with 1000,
	// 20-23 µs with 10000); a client-go client leaves it in the
	// connection, and an apiserver closes a watch it cannot send to for
	// long (the reflector then resumes it from its resourceVersion). It
	// bounds one informer; QueueBudget bounds the queues of many together
	// (a factory's). Default DefaultQueueCapacity, or two batches if
	// BatchSize is larger than DefaultBatchSize.
	QueueCapacity int

	// QueueBudget, when set, is shared with the queues of other
	// informers: together they hold at most its limit of deltas and
	// listed objects, on top of QueueCapacity (see deltafifo.Budget).
	// Package factory gives one to all of its informers
	// (factory.Options.QueueBudget). The informer closes its queue when
	// it stops, which gives its share back. Default nil: QueueCapacity
	// alone bounds the queue.
	QueueBudget *deltafifo.Budget

	// BatchSize is the most keys popped and applied to the store in one
	// Apply (one bbolt transaction). Default DefaultBatchSize.
	BatchSize int

	// ReplayPending is the most notifications a handler may have pending
	// while objects are replayed to it (warm start, a handler added late,
	// a relist's changes): the replay waits while a handler is behind, so
	// memory stays flat however many objects are replayed. Live watch
	// events are never held back. A handler that never returns therefore
	// stalls replays (and, through the bounded queue, the watch) instead of
	// growing memory. Default DefaultReplayPending.
	ReplayPending int

	// ReplayParallelism is the number of goroutines that decode objects
	// during a replay, when the store implements ParallelScanner.
	// Otherwise the store's Scan decodes on one goroutine while the
	// informer distributes the previous chunk. Default 0: GOMAXPROCS.
	ReplayParallelism int

	// ApplyBackoff and ApplyBackoffCap shape the retries of a failed store
	// write: the wait starts at ApplyBackoff and doubles up to
	// ApplyBackoffCap. Defaults DefaultApplyBackoff and
	// DefaultApplyBackoffCap.
	ApplyBackoff, ApplyBackoffCap time.Duration

	// WarmStartChanges selects what the handlers are told on a warm
	// start. By default (false) a warm start is observationally a cold
	// start: the changes the server made while the informer was down are
	// applied to the store first, without notifications, and once the
	// store has caught up with the server's state at the informer's start,
	// the store is replayed to the handlers as the initial list (adds with
	// isInInitialList true), exactly what a LIST would have given: an
	// object deleted while the informer was down never appears, one
	// updated appears once at its current version, one created as an
	// initial add. A controller that switches from client-go behaves at
	// startup as after a cold start.
	//
	// With WarmStartChanges, the handlers are told the stored state as the
	// initial list at once, then each change made while the informer was
	// down as a live add, update or delete: "what happened since my last
	// run". Caveat: it tells changes, not work. An event the previous
	// process had applied to its store but whose handling it had not
	// finished at its kill is part of the stored state, told as an
	// initial add, not replayed as the change it was. Either way HasSynced
	// turns true only once the store holds every change the server had
	// made before the informer started, and the handlers were told.
	// Default false.
	WarmStartChanges bool

	// Reflector configures the reflector (page size, WatchList, backoff).
	// Its ResumeFrom, WatchErrorHandler, Metrics and Logger are set by the
	// informer. Default: the reflector's defaults.
	Reflector reflector.Options

	// Clock drives resync checks, retries, the pause after a handler
	// panicked and the mutation detector's checks. Default: the real
	// clock.
	Clock clock.WithTicker

	// DetectMutations turns on the mutation detector, for tests
	// (invariant 6): the informer keeps a deep copy of every object it
	// hands to a handler or that GetStore and GetIndexer return (Store
	// returns the store itself, unchecked), compares them with their
	// copies every second (on Clock; up to a thousand copies a second, a
	// different share each time, so that the check never takes the CPU
	// the pipeline needs) and all of them when it stops, and reports those
	// that changed to OnMutation. It costs a copy of every object handed
	// out, kept two to four minutes. Default: false, or true when the
	// environment variable EnvMutationDetector (KUBE_CACHE_MUTATION_DETECTOR,
	// client-go's switch) is true.
	DetectMutations bool

	// UnsharedOldObjects decodes the old object of every update whole,
	// a watch event's or a relist's. By default, a store that can
	// (store.LikeStatesReader, store.SharedChanges) decodes only what the
	// update changed and shares the rest with the new object (the spec
	// of a status update, the unchanged labels), which saves most of the
	// decode. Handlers must not change the objects they are given, old or
	// new (as in client-go), and with sharing a change to the old object
	// would also change the new one, which the cache may hold. Set this for
	// handlers that cannot be trusted to leave the old object alone; the
	// mutation detector (DetectMutations) finds such handlers. Default:
	// false.
	UnsharedOldObjects bool

	// KeepListMemory leaves the memory this informer's start, relists and
	// replays allocated to the Go runtime's own pace. By default, once a
	// relist of 1,000 objects or more has committed and its changes were
	// told, or was aborted (a cold start's list, the relist after a 410),
	// once a replay of as many to handlers ended, and once the informer
	// first synced with as many in its store (after a warm start's checks
	// and catch-up, or a cold start's list), the informer asks for a
	// collection that returns the freed pages to the OS
	// (runtime/debug.FreeOSMemory). It waits a second, then until no start,
	// relist or replay of the process's informers is in flight, at most ten
	// seconds in all (an informer that never syncs, its resource forbidden
	// or missing, keeps every later collection at ten seconds); one
	// collection serves every request made before it started, and two never
	// run at once. A relist allocates several times the informer's steady
	// heap; the runtime keeps its next heap goal, and the pages up to it,
	// from a collection made during the relist, so a controller that goes
	// quiet after its start would otherwise stay resident at the relist's
	// size until the runtime's forced collection two minutes later. The
	// collection is the process's: set this on every informer, or set the
	// environment variable EnvKeepListMemory, for a process that manages its
	// own collections. Default: false, or true when EnvKeepListMemory is
	// true.
	KeepListMemory bool

	// OnMutation receives the mutation detector's report of objects
	// changed after they were handed out. Default: panic with the report,
	// as client-go's detector does: a mutated cache cannot be trusted.
	OnMutation func(report string)
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Store == nil:
		return o, fmt.Errorf("%w: Store is required", ErrInvalidOptions)
	case o.ResyncPeriod < 0:
		return o, fmt.Errorf("%w: ResyncPeriod %v is negative", ErrInvalidOptions, o.ResyncPeriod)
	case o.QueueCapacity < 0:
		return o, fmt.Errorf("%w: QueueCapacity %d is negative", ErrInvalidOptions, o.QueueCapacity)
	case o.BatchSize < 0:
		return o, fmt.Errorf("%w: BatchSize %d is negative", ErrInvalidOptions, o.BatchSize)
	case o.ReplayPending < 0:
		return o, fmt.Errorf("%w: ReplayPending %d is negative", ErrInvalidOptions, o.ReplayPending)
	case o.ReplayParallelism < 0:
		return o, fmt.Errorf("%w: ReplayParallelism %d is negative", ErrInvalidOptions, o.ReplayParallelism)
	case o.ApplyBackoff < 0 || o.ApplyBackoffCap < 0:
		return o, fmt.Errorf("%w: negative ApplyBackoff %v or ApplyBackoffCap %v", ErrInvalidOptions, o.ApplyBackoff, o.ApplyBackoffCap)
	}
	for name, fn := range o.Indexers {
		if fn == nil {
			return o, fmt.Errorf("%w: index %q has a nil IndexFunc", ErrInvalidOptions, name)
		}
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.QueueCapacity == 0 {
		// Two batches of a larger BatchSize: a batch never holds more
		// than the queue.
		o.QueueCapacity = max(DefaultQueueCapacity, 2*o.BatchSize)
	}
	if o.ReplayPending == 0 {
		o.ReplayPending = DefaultReplayPending
	}
	if o.ApplyBackoff == 0 {
		o.ApplyBackoff = DefaultApplyBackoff
	}
	if o.ApplyBackoffCap == 0 {
		o.ApplyBackoffCap = DefaultApplyBackoffCap
	}
	if o.ApplyBackoffCap < o.ApplyBackoff {
		o.ApplyBackoffCap = o.ApplyBackoff
	}
	if o.Metrics == nil {
		o.Metrics = NoopMetrics{}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if !o.DetectMutations {
		o.DetectMutations, _ = strconv.ParseBool(os.Getenv(EnvMutationDetector))
	}
	if !o.KeepListMemory {
		o.KeepListMemory, _ = strconv.ParseBool(os.Getenv(EnvKeepListMemory))
	}
	return o, nil
}

// Metrics receives an informer's measurements. It includes the reflector's
// and the queue's metrics. Methods must be fast, must not block and must
// not call the informer; the queue's are called with its lock held.
type Metrics interface {
	reflector.Metrics
	deltafifo.Metrics
	// Applied reports one store write (Apply, or a relist's commit) of n
	// objects that took d; err is nil on success.
	Applied(d time.Duration, n int, err error)
	// StoreObjects reports the number of objects in the store after each
	// write.
	StoreObjects(n int)
	// Replayed reports a replay of n objects to handlers that took d; kind
	// is "warm-start", "handler" or "relist".
	Replayed(kind string, d time.Duration, n int)
	// Healthy reports whether the last store write succeeded.
	Healthy(ok bool)
}

// NoopMetrics is the default Metrics: it does nothing.
type NoopMetrics struct{ reflector.NoopMetrics }

// Depth implements Metrics.
func (NoopMetrics) Depth(int) {}

// Adds implements Metrics.
func (NoopMetrics) Adds(int) {}

// Applied implements Metrics.
func (NoopMetrics) Applied(time.Duration, int, error) {}

// StoreObjects implements Metrics.
func (NoopMetrics) StoreObjects(int) {}

// Replayed implements Metrics.
func (NoopMetrics) Replayed(string, time.Duration, int) {}

// Healthy implements Metrics.
func (NoopMetrics) Healthy(bool) {}
