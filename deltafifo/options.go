package deltafifo

import (
	"fmt"

	"github.com/warmcache/warmcache/store"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// DefaultCapacity is the capacity of a queue whose Options.Capacity is 0.
const DefaultCapacity = 10000

// DefaultName is the name of a queue whose Options.Name is empty.
const DefaultName = "deltafifo"

// KnownObjects lists the keys of the objects the consumer already holds
// (its store). Resync reads it; it is called without the queue's lock held
// and must be safe for concurrent use. A warmcache store.Store and a
// client-go cache.Store satisfy it. The objects themselves are never read:
// Sync deltas carry keys (see Queue.Resync).
type KnownObjects interface {
	// ListKeys returns the keys of every known object.
	ListKeys() []string
}

// Metrics receives the queue's metrics. Its methods are called with the
// queue's lock held, in the order of the changes they report: they must be
// fast and must not call the queue.
type Metrics interface {
	// Depth reports the queue's depth (queued deltas plus queued page
	// objects) after every change.
	Depth(depth int)
	// Adds counts the deltas and page objects one push added to the
	// depth (a delete deduplicated with the previous one adds none).
	Adds(n int)
}

// Options configures a Queue. The zero value is valid.
type Options struct {
	// Name names the queue in logs and in HasSyncedChecker. Default
	// DefaultName.
	Name string

	// KeyFunc computes an object's key. A cache.DeletedFinalStateUnknown
	// always has its own Key, whatever KeyFunc does; an error or panic
	// is a cache.KeyError (store.KeyOf). A consumer that keeps the
	// objects in a store passes the store's KeyFunc. Default
	// store.DefaultKeyFunc.
	KeyFunc cache.KeyFunc

	// KnownObjects is the consumer's store, read by Resync. Default nil:
	// Resync does nothing.
	KnownObjects KnownObjects

	// Capacity bounds the queue's depth: the number of queued deltas plus
	// queued page objects. A push that would exceed it blocks until the
	// consumer pops (one page larger than Capacity is accepted into an
	// empty queue). While a replace is open, its pages also wait until
	// the depth is at most an eighth of the page objects popped since
	// BeginReplace (at least 64), so that a relist's room grows with what
	// its consumer has applied (see Queue.ReplacePage). Default
	// DefaultCapacity; negative is an error.
	Capacity int

	// Budget, when set, is shared with other queues: their depths
	// together are bounded by its limit, on top of each queue's Capacity
	// (see Budget for how every queue still makes progress). Close the
	// queue when its consumer stops, so that it gives its share back.
	// Default nil: only Capacity bounds the queue.
	Budget *Budget

	// Transformer, when set, is applied to every object pushed by Add,
	// Update, Delete and ReplacePage before it is queued, outside the
	// queue's lock, as client-go's RealFIFO does. It is not applied to a
	// cache.DeletedFinalStateUnknown nor to Resync's objects (they come
	// from the store, already transformed). It may mutate the object in
	// place (see cache.TransformFunc). An error fails the push. Default
	// nil.
	Transformer cache.TransformFunc

	// InitialResourceVersion is the resourceVersion the consumer already
	// holds (on a warm start, the store's persisted one). Until an event
	// with a resourceVersion is pushed it is the queue's last
	// resourceVersion, so KindDeltas batches carry it rather than an empty
	// one. A consumer with state has had its initial list (on a warm
	// start, the stored objects): when it is set, no replace is the
	// initial list, so a relist, even one before the initial sync
	// completes (a 410 on the resumed watch), has IsInInitialList false,
	// as client-go flags a relist after its first; and Add, Update and
	// Delete pushed before MarkSynced (a warm start's catch-up) do not
	// complete the initial sync. Default "".
	InitialResourceVersion string

	// Logger receives the queue's log lines, with Name added. Default
	// klog.Background().
	Logger klog.Logger

	// Metrics receives the queue's depth and add counts. Default: no
	// metrics.
	Metrics Metrics
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Capacity < 0 {
		return o, fmt.Errorf("%w: Capacity %d is negative", ErrInvalidArgument, o.Capacity)
	}
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.KeyFunc == nil {
		o.KeyFunc = store.DefaultKeyFunc
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	o.Logger = klog.LoggerWithName(o.Logger, o.Name)
	if o.Metrics == nil {
		o.Metrics = noMetrics{}
	}
	return o, nil
}

type noMetrics struct{}

func (noMetrics) Depth(int) {}
func (noMetrics) Adds(int)  {}
