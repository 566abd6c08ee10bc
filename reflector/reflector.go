package reflector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Reflector lists and watches one resource and pushes what it sees into a
// Sink; see the package documentation. Run it once; LastSyncResourceVersion
// may be called concurrently with Run.
type Reflector struct {
	lw           cache.ListerWatcherWithContext
	sink         Sink
	expectedType reflect.Type
	opts         Options
	clock        clock.Clock
	backoff      *backoff
	metrics      Metrics
	// identity is handed to the WatchErrorHandler: client-go's handler type
	// takes a *cache.Reflector. It only carries Name and TypeDescription.
	identity *cache.Reflector
	running  atomic.Bool

	// rvMu guards lastSyncRV and rvUnavailable.
	rvMu sync.RWMutex
	// lastSyncRV is the RV of the last list, event or bookmark pushed.
	lastSyncRV string
	// rvUnavailable is true after the server answered 410 or
	// TooLargeResourceVersion to a list at lastSyncRV: relist from "".
	rvUnavailable bool

	// Owned by the goroutine running Run.
	watchListOff bool      // WatchList found unsupported
	lastRelist   time.Time // when the last relist completed
	replaceOpen  bool      // a BeginReplace was pushed without EndReplace
	pass         *ListPass // of Options.ListGate, while a relist holds it
	internalErrs cache.RetryWithDeadline
}

// New returns a Reflector that keeps sink in step with lw. expectedType,
// when not nil, is an example of the objects to expect (watch events of
// another Go type are dropped and logged), as in client-go. It returns an
// error wrapping ErrInvalidOptions for a nil lw or sink or bad options.
func New(lw cache.ListerWatcherWithContext, expectedType runtime.Object, sink Sink, opts Options) (*Reflector, error) {
	if lw == nil {
		return nil, invalid("nil ListerWatcher")
	}
	if sink == nil {
		return nil, invalid("nil Sink")
	}
	o, err := opts.withDefaults(expectedType)
	if err != nil {
		return nil, err
	}
	r := &Reflector{
		lw:      lw,
		sink:    sink,
		opts:    o,
		clock:   o.Clock,
		backoff: newBackoff(*o.Backoff, o.BackoffReset, o.Clock),
		metrics: o.Metrics,
		identity: cache.NewReflectorWithOptions(nil, expectedType, nil, cache.ReflectorOptions{
			Name: o.Name, TypeDescription: o.TypeDescription, Logger: o.Logger,
		}),
		internalErrs: cache.NewRetryWithDeadline(o.MaxInternalErrorRetryDuration, time.Minute, isInternal, o.Clock),
	}
	if expectedType != nil {
		r.expectedType = reflect.TypeOf(expectedType)
	}
	return r, nil
}

// Name returns the reflector's name.
func (r *Reflector) Name() string { return r.opts.Name }

// TypeDescription returns the description of the reflected type.
func (r *Reflector) TypeDescription() string { return r.opts.TypeDescription }

// LastSyncResourceVersion returns the RV of the last list, event or
// bookmark pushed to the Sink (on a warm start, the persisted RV until
// then), as client-go's Reflector does. It is not synchronised with the
// Sink's consumer.
func (r *Reflector) LastSyncResourceVersion() string {
	r.rvMu.RLock()
	defer r.rvMu.RUnlock()
	return r.lastSyncRV
}

func (r *Reflector) setLastSyncResourceVersion(rv string) {
	if rv == "" {
		return
	}
	r.rvMu.Lock()
	defer r.rvMu.Unlock()
	r.lastSyncRV = rv
}

func (r *Reflector) setRVUnavailable(v bool) {
	r.rvMu.Lock()
	defer r.rvMu.Unlock()
	r.rvUnavailable = v
}

// relistResourceVersion is the RV of a paginated relist, as client-go
// computes it: "" after 410/too large, "0" before any sync, else the last.
func (r *Reflector) relistResourceVersion() string {
	r.rvMu.RLock()
	defer r.rvMu.RUnlock()
	switch {
	case r.rvUnavailable:
		return ""
	case r.lastSyncRV == "":
		return "0"
	}
	return r.lastSyncRV
}

// rewatchResourceVersion is the RV of a WatchList relist: "" (most recent)
// after 410/too large or before any sync, else the last.
func (r *Reflector) rewatchResourceVersion() string {
	r.rvMu.RLock()
	defer r.rvMu.RUnlock()
	if r.rvUnavailable {
		return ""
	}
	return r.lastSyncRV
}

// Run lists and watches until ctx is done, then returns once the open
// watch is stopped. Run must be called once; later calls log an error and
// return.
func (r *Reflector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if r.opts.Logger != nil {
		logger = *r.opts.Logger
	}
	logger = klog.LoggerWithValues(logger, "reflector", r.opts.Name, "type", r.opts.TypeDescription)
	ctx = klog.NewContext(ctx, logger)
	if !r.running.CompareAndSwap(false, true) {
		logger.Error(nil, "Reflector.Run called more than once; ignoring")
		return
	}
	logger.V(3).Info("Starting reflector")
	defer logger.V(3).Info("Stopping reflector")
	defer r.abortReplace(ctx)
	defer r.leaveGate() // a pass the resume check held when ctx ended

	warm := r.resume(ctx)
	cu := catchUp{started: r.clock.Now()}
	ahead := false
	// failed is set when the warm start could not go on (the Sink failed):
	// the loop below relists. listedWhole is set when the resume check's
	// page was the relist.
	failed, listedWhole := false, false
	if warm {
		a, err := r.checkResume(ctx, r.LastSyncResourceVersion())
		if err != nil {
			// ctx ended before the server could be asked: nothing is
			// decided, so nothing of the stored state may be served.
			return
		}
		cu.pending = true
		switch {
		case a.check == resumeAhead:
			// Relist the most recent state: a list not older than the
			// stored RV would wait for the server to reach it.
			warm, ahead = false, true
			r.setRVUnavailable(true)
		case a.check == resumeCurrent:
			cu.mode = catchUpOpen
		case a.check == resumeBehind && a.whole:
			// The check's page holds the whole resource at a.rv.
			cu.mode, listedWhole = catchUpOpen, !a.same
			if err := r.resumeWhole(ctx, a, &cu); err != nil {
				if ctx.Err() != nil {
					return
				}
				r.abortReplace(ctx)
				r.handleError(ctx, err)
				failed = true
			}
		case a.check == resumeBehind && a.same:
			// The version check found every object at its stored
			// resourceVersion: the stored state is the server's at a.rv.
			cu.mode = catchUpOpen
			if err := r.resumeUnchanged(ctx, a.rv, len(a.versions.listed)); err != nil {
				if ctx.Err() != nil {
					return
				}
				r.abortReplace(ctx)
				r.handleError(ctx, err)
				failed = true
			}
		case a.check == resumeBehind:
			cu.mode, cu.target, cu.versions = catchUpTarget, a.rv, a.versions
		default:
			cu.mode, cu.settle = catchUpSettle, r.opts.ResumeSettle
		}
		if !warm || failed {
			cu.pending = false
		}
		r.leaveGate() // the resume check's (checkResume)
	}
	if r.opts.OnResumeDecided != nil {
		r.opts.OnResumeDecided(ahead)
	}
	if warm && !failed && !listedWhole {
		r.metrics.Resumed()
	}
	needRelist := !warm || failed
	var w watch.Interface
	for ctx.Err() == nil {
		if needRelist {
			var err error
			w, err = r.relist(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				r.abortReplace(ctx)
				r.handleError(ctx, err)
				r.sleep(ctx, r.retryDelay(err))
				continue
			}
			needRelist = false
			// A relist completes the sync; no MarkSynced, and nothing
			// left to track.
			cu.pending, cu.versions = false, versionCheck{}
		}
		err := r.watch(ctx, w, &cu)
		w = nil
		if ctx.Err() != nil {
			return
		}
		needRelist = true
		if errors.Is(err, ErrNoCatchUpSignal) {
			// Not a failure: the exact way to sync on such a server is
			// a relist of the most recent state, at once.
			logger.Info("The resumed watch cannot show that it caught up with the server (no bookmarks); relisting the most recent state to sync",
				"serverResourceVersion", cu.target, "err", err)
			r.setRVUnavailable(true)
			continue
		}
		r.handleError(ctx, err)
		r.sleep(ctx, r.relistDelay(err))
	}
}

// resumeWhole ends a warm start whose resume check listed the whole
// resource at a.rv (a store of at most ListPageSize objects, see
// Options.StoredVersions). When that is the stored state (no object
// changed since the stored RV), it pushes Bookmark(a.rv): the stored state
// is the server's at a.rv, and the watch resumes from there, synced at
// once (cu is catchUpOpen). Otherwise the page is the relist: it pushes
// BeginReplace, the page and EndReplace(a.rv), which completes the sync,
// and clears cu.pending. Either way the watch that follows starts from
// a.rv, and nothing more is listed.
func (r *Reflector) resumeWhole(ctx context.Context, a resumeAnswer, cu *catchUp) error {
	logger := klog.FromContext(ctx)
	if a.same {
		return r.resumeUnchanged(ctx, a.rv, len(a.items))
	}
	logger.V(2).Info("The resume check listed the whole resource, which changed since the stored resourceVersion; that list is the relist",
		"serverResourceVersion", a.rv, "objects", len(a.items))
	cu.pending = false
	r.metrics.RelistStarted()
	if err := r.beginReplace(ctx); err != nil {
		return err
	}
	p := pager{r: r}
	for _, o := range a.items {
		if err := p.add(ctx, o); err != nil {
			return err
		}
	}
	if err := p.flush(ctx); err != nil {
		return err
	}
	if err := r.endReplace(ctx, a.rv); err != nil {
		return err
	}
	r.lastRelist = r.clock.Now()
	return nil
}

// resumeUnchanged ends a warm start whose resume check found the stored
// state to be the server's at rv (n objects, none changed since the stored
// RV): it pushes Bookmark(rv), and the watch resumes from there, synced
// at once.
func (r *Reflector) resumeUnchanged(ctx context.Context, rv string, n int) error {
	klog.FromContext(ctx).V(2).Info("The resource did not change since the stored resourceVersion; synced", "serverResourceVersion", rv, "objects", n)
	if err := r.sink.Bookmark(ctx, rv); err != nil {
		return fmt.Errorf("%w: bookmark at resourceVersion %s: %w", ErrSink, rv, err)
	}
	r.setLastSyncResourceVersion(rv)
	return nil
}

// resume consults ResumeFrom and reports whether this is a warm start.
func (r *Reflector) resume(ctx context.Context) bool {
	if r.opts.ResumeFrom == nil {
		return false
	}
	rv, complete := r.opts.ResumeFrom()
	if rv == "" || rv == "0" {
		return false
	}
	r.setLastSyncResourceVersion(rv)
	logger := klog.FromContext(ctx)
	if !complete {
		logger.V(2).Info("Stored state is incomplete; relisting", "resourceVersion", rv)
		return false
	}
	logger.V(2).Info("Resuming watch from the stored resourceVersion", "resourceVersion", rv)
	return true
}

// relist pushes the complete current state into the Sink. It returns the
// open watch to continue with after a WatchList, nil after a LIST.
//
// As in client-go, a WatchList answered with 429 Too Many Requests or a
// refused connection (as a failed request or as an ERROR event of the
// stream) is sent again after a backoff (at least the 429's Retry-After):
// the server is busy or away, and a LIST at once would only add load. A
// WatchList that fails for any other reason is followed at once by a
// LIST, so that a source that cannot serve sendInitialEvents (an
// aggregated API, a proxy, a custom ListerWatcher) still syncs. WatchList
// errors are logged, and only the LIST's error, if any, is returned.
// After a server's refusal (ErrWatchListUnsupported) every later relist
// uses LIST; after any other error the next relist tries WatchList again,
// as client-go's does.
func (r *Reflector) relist(ctx context.Context) (watch.Interface, error) {
	r.metrics.RelistStarted()
	logger := klog.FromContext(ctx)
	if err := r.enterGate(ctx); err != nil {
		return nil, err
	}
	defer r.leaveGate()
	if r.useWatchList() {
		w, err := r.watchList(ctx)
		for err != nil && ctx.Err() == nil && isWatchListRetriable(err) {
			r.abortReplace(ctx)
			d := r.retryDelay(err)
			logger.V(2).Info("WatchList failed; backing off before sending it again", "retryIn", d, "err", err)
			r.leaveGate() // holding nothing while it waits
			if !r.sleep(ctx, d) {
				return nil, ctx.Err()
			}
			if err := r.enterGate(ctx); err != nil {
				return nil, err
			}
			w, err = r.watchList(ctx)
		}
		if err == nil {
			r.lastRelist = r.clock.Now()
			return w, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if errors.Is(err, ErrWatchListUnsupported) {
			logger.Info("WatchList is not supported; relisting with LIST from now on", "err", err)
			r.watchListOff = true
		} else {
			logger.Info("WatchList failed; relisting with LIST", "err", err)
		}
		// The LIST opens a replace of its own once the server answers.
		r.abortReplace(ctx)
	}
	if err := r.list(ctx); err != nil {
		return nil, err
	}
	r.lastRelist = r.clock.Now()
	return nil, nil
}

// isWatchListRetriable reports the WatchList errors after which
// client-go's reflector sends the WatchList again after a backoff rather
// than listing: the server is busy (429) or unreachable.
func isWatchListRetriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// enterGate takes a pass of Options.ListGate, if any, for a relist or
// a resume check; leaveGate gives it back.
func (r *Reflector) enterGate(ctx context.Context) error {
	pass, err := r.opts.ListGate.Enter(ctx, r.opts.Name)
	r.pass = pass
	return err
}

func (r *Reflector) leaveGate() {
	r.pass.Leave()
	r.pass = nil
}

func (r *Reflector) useWatchList() bool {
	return r.opts.UseWatchList == WatchListAuto && !r.watchListOff &&
		!watchlist.DoesClientNotSupportWatchListSemantics(r.lw)
}

// relistDelay is the wait before a relist caused by err.
func (r *Reflector) relistDelay(err error) time.Duration {
	if classify(err) == classExpired && (r.lastRelist.IsZero() || r.clock.Since(r.lastRelist) >= r.opts.BackoffReset) {
		return 0
	}
	return r.retryDelay(err)
}

// handleError reports err unless it is the end of Run.
func (r *Reflector) handleError(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	if isExpired(err) {
		r.metrics.Expired()
	}
	r.opts.WatchErrorHandler(ctx, r.identity, err)
}

// beginReplace pushes BeginReplace. A relist restarted midway (an expired
// continue token, a WatchList stream that failed or turned out to be
// unsupported) still has its replace open: it is aborted first, so that a
// Sink that refuses nested replaces (deltafifo.Queue) accepts the new one.
func (r *Reflector) beginReplace(ctx context.Context) error {
	r.abortReplace(ctx)
	if err := r.sink.BeginReplace(ctx); err != nil {
		return fmt.Errorf("%w: begin replace: %w", ErrSink, err)
	}
	r.replaceOpen = true
	return nil
}

// endReplace pushes EndReplace(rv) and records rv.
func (r *Reflector) endReplace(ctx context.Context, rv string) error {
	if err := r.sink.EndReplace(ctx, rv); err != nil {
		return fmt.Errorf("%w: end replace at %s: %w", ErrSink, rv, err)
	}
	r.replaceOpen = false
	r.setLastSyncResourceVersion(rv)
	r.setRVUnavailable(false)
	return nil
}

// abortReplace tells a Sink that implements ReplaceAborter that the open
// replace is abandoned.
func (r *Reflector) abortReplace(ctx context.Context) {
	if !r.replaceOpen {
		return
	}
	r.replaceOpen = false
	if a, ok := r.sink.(ReplaceAborter); ok {
		if err := a.AbortReplace(); err != nil {
			klog.FromContext(ctx).V(2).Info("Sink could not abort the open replace", "err", err)
		}
	}
}

// watchTimeout returns a random server-side timeout in [min, 2*min].
func (r *Reflector) watchTimeout() *int64 {
	lo := r.opts.MinWatchTimeout.Seconds()
	s := int64(lo + rand.Float64()*lo)
	return &s
}

// watchOptions returns the options of a live watch from rv.
func (r *Reflector) watchOptions(rv string) metav1.ListOptions {
	return metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: r.watchTimeout()}
}
