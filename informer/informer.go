package informer

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
)

// Informer is warmcache's cache.SharedIndexInformer: client-go's shared
// informer contract (see the package documentation) on a store.Store that
// may live on disk and survive restarts.
//
// All methods are safe for concurrent use. Run (or RunWithContext) may be
// called once; an informer that has stopped cannot be started again.
type Informer struct {
	lw      cache.ListerWatcherWithContext
	example runtime.Object
	opts    Options
	store   store.Store
	name    string
	proc    *processor
	// detector is the mutation detector, nil when off; reader is the store
	// GetStore and GetIndexer return (checked by the detector when on).
	detector *mutationDetector
	reader   store.Store

	// resume is the first reflector's decision on how it starts, which
	// the warm-start replay waits for. Made by start.
	resume *resumeDecision

	// mu guards the fields below it.
	mu                sync.Mutex
	started, stopped  bool
	transform         cache.TransformFunc
	watchErrorHandler cache.WatchErrorHandlerWithContext
	// resyncCheckPeriod and defaultResync are client-go's: the check
	// period shrinks to the smallest handler period added before start.
	resyncCheckPeriod time.Duration
	defaultResync     time.Duration
	queue             *deltafifo.Queue
	refl              *reflector.Reflector
	// late are listeners added after start, waiting for their replay;
	// popCancel, when set, interrupts the processing loop's Pop so that it
	// serves them.
	late      []*listener
	popCancel context.CancelFunc
	// lateRoom, when set, is closed to wake the callers of
	// AddEventHandler that wait for room in the late list (see
	// lateFullLocked); loopServing says the processing loop serves late
	// handlers (it is past its warm start and has not exited), loopWaiting
	// that it waits on a handler, the file check or a write retry.
	lateRoom    chan struct{}
	loopServing bool
	loopWaiting bool
	// relistCancel stops the running reflector so that a new one
	// relists; forceRelist makes that one relist even if the store still
	// says it is complete.
	relistCancel context.CancelFunc
	forceRelist  bool
	// relistRequested is set by ReportCorruption and cleared when the
	// processing loop begins a relist: reports in between do not restart
	// the reflector again.
	relistRequested bool

	// synced is closed once the informer has synced.
	synced     chan struct{}
	syncedOnce sync.Once
	// writeErr holds the last store write error (nil pointer: healthy).
	writeErr atomic.Pointer[error]

	// afterBatch, when set (by tests, before Run), is called by the
	// processing loop after each batch is handled.
	afterBatch func(deltafifo.Batch)
	// startBurst is set from start until endStart: the start's burst,
	// counted by releaser.
	startBurst bool
	// releaser is told of the informer's bursts (Options.KeepListMemory):
	// ownReleaser, or a test's. stop stops ownReleaser.
	releaser    releaser
	ownReleaser *processReleaser
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// New returns an informer that keeps opts.Store in step with lw and
// notifies handlers of the changes. lw may be a cache.ListerWatcher or a
// cache.ListerWatcherWithContext; exampleObject is an object of the
// informer's type (typed, or *unstructured.Unstructured for a dynamic
// informer). It returns an error wrapping ErrInvalidOptions for bad
// options (its own or the reflector's), and the store's error if an index
// cannot be added.
func New(lw cache.ListerWatcher, exampleObject runtime.Object, opts Options) (*Informer, error) {
	if lw == nil {
		return nil, fmt.Errorf("%w: nil ListerWatcher", ErrInvalidOptions)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.ObjectDescription == "" {
		o.ObjectDescription = describe(exampleObject)
	}
	if o.Name == "" {
		o.Name = o.ObjectDescription
	}
	if len(o.Indexers) > 0 {
		have := o.Store.GetIndexers()
		missing := cache.Indexers{}
		for name, fn := range o.Indexers {
			if _, ok := have[name]; !ok {
				missing[name] = fn
			}
		}
		if len(missing) > 0 {
			if err := o.Store.AddIndexers(missing); err != nil {
				return nil, fmt.Errorf("informer %s: add indexers: %w", o.Name, err)
			}
		}
	}
	i := &Informer{
		lw:                cache.ToListerWatcherWithContext(lw),
		example:           exampleObject,
		opts:              o,
		store:             o.Store,
		name:              o.Name,
		proc:              newProcessor(),
		resyncCheckPeriod: o.ResyncPeriod,
		defaultResync:     o.ResyncPeriod,
		synced:            make(chan struct{}),
		reader:            o.Store,
	}
	i.ownReleaser = newProcessReleaser()
	i.releaser = i.ownReleaser
	if o.DetectMutations {
		i.detector = newMutationDetector(o.Name, o.Clock, o.OnMutation)
		i.proc.detector = i.detector
		i.reader = &checkedStore{Store: o.Store, d: i.detector}
		i.logger().V(1).Info("Warning: the mutation detector is on; it keeps a copy of every object handed out", "informer", o.Name)
	}
	// Validate the reflector options now rather than at Run.
	if _, err := i.newReflector(nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return i, nil
}

// describe is client-go's default object description: the GVK of an
// unstructured example, else its Go type.
func describe(obj runtime.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if gvk := u.GroupVersionKind(); !gvk.Empty() {
			return gvk.String()
		}
	}
	if obj == nil {
		return "<unspecified>"
	}
	return reflect.TypeOf(obj).String()
}

// GetStore returns the informer's store (the store.Store of Options; with
// Options.DetectMutations, a view of it whose reads the detector checks).
// Callers must not write to it, nor mutate the objects it returns.
func (i *Informer) GetStore() cache.Store { return i.reader }

// GetIndexer returns the informer's store as a cache.Indexer, as GetStore;
// client-go's typed listers work on it.
func (i *Informer) GetIndexer() cache.Indexer { return i.reader }

// Store returns the informer's store.Store itself (never checked by the
// mutation detector).
func (i *Informer) Store() store.Store { return i.store }

// AddIndexers adds indexes to the store. It fails once the informer has
// stopped (ErrStopped), for a name that exists (store.ErrIndexConflict),
// and, on a bolt store, while a relist is being written
// (store.ErrReplaceInProgress; retry later).
func (i *Informer) AddIndexers(indexers cache.Indexers) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return &stoppedError{fmt.Sprintf("informer %s: indexer was not added because it has stopped already", i.name)}
	}
	return i.store.AddIndexers(indexers)
}

// GetController returns a cache.Controller view of the informer, as
// client-go does: its Run methods do nothing.
func (i *Informer) GetController() cache.Controller { return controllerView{i} }

type controllerView struct{ i *Informer }

func (controllerView) RunWithContext(context.Context)        {}
func (controllerView) Run(<-chan struct{})                   {}
func (v controllerView) HasSynced() bool                     { return v.i.HasSynced() }
func (v controllerView) HasSyncedChecker() cache.DoneChecker { return v.i.HasSyncedChecker() }
func (v controllerView) LastSyncResourceVersion() string     { return v.i.LastSyncResourceVersion() }

var _ cache.Controller = controllerView{}

// HasSynced reports whether the store holds a complete picture of the
// server and every change of it was handed to the handlers: on a cold
// start, the first relist was committed; on a warm start, the resumed
// watch caught up with the server's resourceVersion at the start and the
// caught-up store was replayed to the handlers (or the relist that
// followed a 410 was committed). Either way the store then holds every
// change the server had made before the informer started.
func (i *Informer) HasSynced() bool {
	select {
	case <-i.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker returns HasSynced as a cache.DoneChecker.
func (i *Informer) HasSyncedChecker() cache.DoneChecker { return syncedChecker{i} }

type syncedChecker struct{ i *Informer }

func (c syncedChecker) Name() string          { return "warmcache informer " + c.i.name }
func (c syncedChecker) Done() <-chan struct{} { return c.i.synced }

func (i *Informer) markSynced() {
	i.syncedOnce.Do(func() {
		close(i.synced)
		i.proc.markSynced()
		i.endStart(true)
	})
}

// endStart ends the start's burst for the releaser (begun in start), once:
// at the first sync, asking for its memory to be returned if the store
// then holds releaseAfterListed objects or more (unless KeepListMemory),
// or at stop, without asking.
func (i *Informer) endStart(synced bool) {
	i.mu.Lock()
	begun := i.startBurst
	i.startBurst = false
	i.mu.Unlock()
	if !begun {
		return
	}
	objects := 0
	if synced {
		if st, err := i.store.State(); err == nil {
			objects = st.Objects
		}
	}
	i.endBurst(objects)
}

// LastSyncResourceVersion returns the resourceVersion the reflector last
// saw (client-go's semantic), or, before it ran, the store's persisted
// one. It is not synchronised with the store.
func (i *Informer) LastSyncResourceVersion() string {
	i.mu.Lock()
	r := i.refl
	i.mu.Unlock()
	if r != nil {
		if rv := r.LastSyncResourceVersion(); rv != "" {
			return rv
		}
	}
	return i.store.LastStoreSyncResourceVersion()
}

// SetWatchErrorHandler sets the handler called when a list or watch fails.
// It returns ErrStarted once the informer has started.
func (i *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return i.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with a context.
// The *cache.Reflector it receives carries the name and type description
// only.
func (i *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	return i.setBeforeStart("set watch error handler", func() { i.watchErrorHandler = handler })
}

// SetTransform sets the function applied to every object before it is
// stored (see cache.TransformFunc). It returns ErrStarted once the
// informer has started. Objects replayed from a persistent store were
// transformed before they were stored.
func (i *Informer) SetTransform(handler cache.TransformFunc) error {
	return i.setBeforeStart("set transform", func() { i.transform = handler })
}

// setBeforeStart runs set under the informer's lock unless it has
// started, when it returns an error of op wrapping ErrStarted.
func (i *Informer) setBeforeStart(op string, set func()) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return fmt.Errorf("informer %s: %s: %w", i.name, op, ErrStarted)
	}
	set()
	return nil
}

// IsStopped reports whether the informer has stopped.
func (i *Informer) IsStopped() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.stopped
}

// HasStarted reports whether Run was called.
func (i *Informer) HasStarted() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.started
}

// Err returns the last store write error, wrapping ErrStoreWrite, while
// writes fail (the informer retries them with backoff), and nil once a
// write succeeds. While it is not nil the store serves its last committed
// state and falls behind the server.
func (i *Informer) Err() error {
	if p := i.writeErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (i *Informer) setWriteErr(err error) {
	if err == nil {
		if i.writeErr.Swap(nil) != nil {
			i.opts.Metrics.Healthy(true)
		}
		return
	}
	i.writeErr.Store(&err)
	i.opts.Metrics.Healthy(false)
}

// Run is RunWithContext with a stop channel.
func (i *Informer) Run(stopCh <-chan struct{}) {
	i.RunWithContext(wait.ContextForChannel(stopCh))
}

// ReportCorruption tells the informer that its store found data it cannot
// decode: the informer relists (a bolt store's ResourceOptions.OnCorruption
// should call it; package factory does). Reports made before that relist has
// begun do nothing more. It does not block.
func (i *Informer) ReportCorruption(err error) {
	i.mu.Lock()
	pending := i.relistRequested
	i.forceRelist, i.relistRequested = true, true
	cancel := i.relistCancel
	i.mu.Unlock()
	if pending {
		i.logger().V(2).Info("The store reported corrupt data; a relist is already pending", "informer", i.name, "err", err)
		return
	}
	i.logger().Error(err, "The store reported corrupt data; relisting", "informer", i.name)
	if cancel != nil {
		cancel()
	}
}

func (i *Informer) logger() klog.Logger {
	if i.opts.Logger != nil {
		return *i.opts.Logger
	}
	return klog.Background()
}
