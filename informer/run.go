package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/wire"
)

// RunWithContext runs the informer until ctx is done, then returns once
// every goroutine it started has ended. It starts the reflector, the
// processing loop (which replays a complete store to the handlers first:
// a warm start), the handlers' goroutines and, with a resync period, the
// resync timer. A second call logs and returns at once.
func (i *Informer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	if i.opts.Logger != nil {
		logger = *i.opts.Logger
	}
	logger = klog.LoggerWithValues(logger, "informer", i.name)
	ctx = klog.NewContext(ctx, logger)

	q, err := i.start(logger)
	if errors.Is(err, ErrStarted) {
		return
	}
	if err != nil {
		logger.Error(err, "Cannot start the informer")
		i.stop()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	i.proc.run()
	var wg sync.WaitGroup
	wg.Go(func() { i.runReflectors(ctx, q) })
	wg.Go(func() {
		// A fatal store error ends the loop: stop everything.
		defer cancel()
		newLoop(i, q, logger).run(ctx)
	})
	if period := i.checkPeriod(); period > 0 {
		wg.Go(func() { i.runResync(ctx, q, period) })
	}
	if i.detector != nil {
		wg.Go(func() { i.detector.run(ctx) })
	}
	<-ctx.Done()
	q.Close()
	wg.Wait()
	i.stop()
	logger.V(2).Info("Informer stopped")
}

// start records the start and builds the queue.
func (i *Informer) start(logger klog.Logger) (*deltafifo.Queue, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		logger.Info("Warning: the informer has started, run more than once is not allowed")
		return nil, ErrStarted
	}
	i.started = true
	// Until it synced, the start allocates as a relist does: a warm
	// start's checks and catch-up, or a cold start's list (counted apart).
	i.startBurst = true
	i.releaser.Begin()
	i.resume = newResumeDecision()
	var initialRV string
	if st, err := i.store.State(); err == nil && st.Complete {
		initialRV = st.ResourceVersion
	}
	q, err := deltafifo.New(deltafifo.Options{
		Name:                   i.name,
		KeyFunc:                i.store.KeyFunc(),
		KnownObjects:           i.store,
		Capacity:               i.opts.QueueCapacity,
		Budget:                 i.opts.QueueBudget,
		Transformer:            forgetWire(i.transform),
		InitialResourceVersion: initialRV,
		Logger:                 logger,
		Metrics:                i.opts.Metrics,
	})
	if err != nil {
		return nil, err
	}
	i.queue = q
	return q, nil
}

// stop marks the informer stopped, stops the handlers and, with the
// mutation detector on, checks the objects handed out a last time.
func (i *Informer) stop() {
	i.endStart(false)
	i.mu.Lock()
	i.stopped = true
	i.late = nil
	i.wakeLateLocked()
	i.mu.Unlock()
	i.proc.stop()
	i.detector.check()
	i.ownReleaser.stop()
}

func (i *Informer) checkPeriod() time.Duration {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.resyncCheckPeriod
}

// runReflectors runs a reflector until ctx is done. ReportCorruption stops
// it; the next one relists.
func (i *Informer) runReflectors(ctx context.Context, q *deltafifo.Queue) {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		rctx, cancel := context.WithCancel(ctx)
		r, err := i.newReflector(q)
		if err != nil {
			cancel()
			logger.Error(err, "Cannot create the reflector")
			return
		}
		i.mu.Lock()
		i.refl, i.relistCancel = r, cancel
		i.mu.Unlock()
		r.Run(rctx)
		cancel()
	}
}

func (i *Informer) newReflector(q *deltafifo.Queue) (*reflector.Reflector, error) {
	ro := i.opts.Reflector
	if ro.Name == "" {
		ro.Name = i.name
	}
	if ro.TypeDescription == "" {
		ro.TypeDescription = i.opts.ObjectDescription
	}
	ro.Metrics = i.opts.Metrics
	if ro.Logger == nil {
		ro.Logger = i.opts.Logger
	}
	i.mu.Lock()
	if i.watchErrorHandler != nil {
		ro.WatchErrorHandler = i.watchErrorHandler
	}
	i.mu.Unlock()
	// resumed is what ResumeFrom told this reflector; both callbacks run
	// on the goroutine running it, ResumeFrom first.
	resumed := false
	ro.ResumeFrom = func() (string, bool) {
		rv, complete := i.resumeFrom()
		resumed = complete
		return rv, complete
	}
	if ro.StoredVersions == nil {
		ro.StoredVersions = i.storedVersions
	}
	user := ro.OnResumeDecided
	ro.OnResumeDecided = func(ahead bool) {
		switch {
		case ahead:
			i.resume.decide(startAhead)
		case !resumed:
			i.resume.decide(startRelisted)
		default:
			i.resume.decide(startResumed)
		}
		if user != nil {
			user(ahead)
		}
	}
	return reflector.New(i.lw, i.example, q, ro)
}

// start is how the first reflector of a run starts on a complete store,
// as far as the warm-start replay is concerned.
type start int

const (
	// startResumed: the reflector resumes the watch from the stored
	// state, checked against the server's resourceVersion (or the check
	// is off): the stored objects are replayed.
	startResumed start = iota
	// startAhead: the resume check found the stored resourceVersion
	// ahead of the server's: the stored state is not the server's, and
	// only the relist tells the handlers.
	startAhead
	// startRelisted: the reflector relists without checking the stored
	// state against the server (a corruption report forced the relist
	// before the check was done): it may be ahead of the server's, so
	// only the relist tells the handlers.
	startRelisted
)

// resumeDecision is decided once, by the first reflector of a run
// (reflector.Options.OnResumeDecided); later reflectors do not change it.
type resumeDecision struct {
	once sync.Once
	// done is closed once decided; how is written before, never after.
	done chan struct{}
	how  start
}

func newResumeDecision() *resumeDecision {
	return &resumeDecision{done: make(chan struct{})}
}

// decide records how, unless already decided, and releases the
// warm-start replay waiting for it.
func (d *resumeDecision) decide(how start) {
	d.once.Do(func() {
		d.how = how
		close(d.done)
	})
}

// wait returns the decision once made, or ctx's error.
func (d *resumeDecision) wait(ctx context.Context) (start, error) {
	select {
	case <-d.done:
		return d.how, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// storedVersions returns the key and resourceVersion of every stored
// object when the store holds at most max (reflector.Options
// .StoredVersions): read without decoding the objects.
func (i *Informer) storedVersions(max int) (map[string]string, cache.KeyFunc, bool) {
	st, err := i.store.State()
	if err != nil || st.Objects > max {
		return nil, nil, false
	}
	keys := i.store.ListKeys()
	if len(keys) > max {
		return nil, nil, false
	}
	out := make(map[string]string, len(keys))
	if sr, ok := i.store.(store.StatesReader); ok {
		// One read transaction for every key, no object decoded.
		states, err := sr.ReadStates(keys, func(int, string) bool { return false })
		if errors.Is(err, store.ErrCorrupt) {
			i.ReportCorruption(fmt.Errorf("read the stored resourceVersions for the resume check: %w", err))
		}
		if err != nil {
			return nil, nil, false
		}
		for n, st := range states {
			if !st.Exists {
				return nil, nil, false
			}
			out[keys[n]] = st.RV
		}
		return out, i.store.KeyFunc(), true
	}
	for _, k := range keys {
		rv, ok, err := i.store.ResourceVersionOf(k)
		if errors.Is(err, store.ErrCorrupt) {
			// The store cannot be trusted: relist, whether or not its
			// OnCorruption reaches this informer.
			i.ReportCorruption(fmt.Errorf("read the stored resourceVersions for the resume check: %w", err))
		}
		if err != nil || !ok {
			return nil, nil, false
		}
		out[k] = rv
	}
	return out, i.store.KeyFunc(), true
}

// resumeFrom tells the reflector where the store stands; after a
// corruption report it always relists.
func (i *Informer) resumeFrom() (string, bool) {
	st, err := i.store.State()
	if err != nil {
		return "", false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return st.ResourceVersion, st.Complete && !i.forceRelist
}

// relistBegun records that a relist reached the processing loop: a
// later corruption report restarts the reflector again.
func (i *Informer) relistBegun() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.relistRequested = false
}

// relistDone clears a pending corruption-triggered relist.
func (i *Informer) relistDone() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.forceRelist = false
}

// runResync asks the queue for Sync deltas whenever a handler is due, as
// client-go's controller does every resync check period.
func (i *Informer) runResync(ctx context.Context, q *deltafifo.Queue, period time.Duration) {
	t := i.opts.Clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if !i.proc.shouldResync(i.opts.Clock.Now()) {
			continue
		}
		if err := q.Resync(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Resync failed")
		}
	}
}

// forgetWire returns fn preceded by forgetting the wire message of the
// object it transforms (package store/wire): the transform may change
// the object, whose message would then no longer be its encoding. Nil
// stays nil.
func forgetWire(fn cache.TransformFunc) cache.TransformFunc {
	if fn == nil {
		return nil
	}
	return func(obj interface{}) (interface{}, error) {
		wire.Forget(obj)
		return fn(obj)
	}
}
