package reflector

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// watch consumes w (or, when w is nil, a new watch from the last RV) and
// keeps watching across clean ends and transient errors. It returns when
// the Sink must be relisted (with the reason) or ctx is done. While a
// warm start is catching up (cu.pending) each watch may push MarkSynced;
// see consume.
func (r *Reflector) watch(ctx context.Context, w watch.Interface, cu *catchUp) error {
	logger := klog.FromContext(ctx)
	var timeout time.Duration
	for {
		// Before the request: the server's timeout counts from it, and a
		// clock read after it could miss time that passed while it was
		// being answered.
		start := r.clock.Now()
		if w == nil {
			if err := ctx.Err(); err != nil {
				// No request once ctx is done (after a backoff it
				// interrupted, or before the first watch).
				return err
			}
			rv := r.LastSyncResourceVersion()
			opts := r.watchOptions(rv)
			if cu.watching() {
				// A catch-up watch: a short timeout, so that the watch
				// cache's pre-timeout bookmark comes soon.
				s := int64(r.opts.CatchUpTimeout / time.Second)
				opts.TimeoutSeconds = &s
			}
			timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
			r.metrics.WatchRequested(false)
			var err error
			w, err = r.lw.WatchWithContext(ctx, opts)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				err = fmt.Errorf("watch %s from resourceVersion %s: %w", r.opts.TypeDescription, rv, err)
				if r.rewatchAfter(err) {
					r.watchAgainAfter(ctx, err)
					continue
				}
				return err
			}
		}
		catching := cu.watching()
		quietAfter := time.Duration(0)
		if catching && timeout > 0 {
			quietAfter = timeout + quietGrace
		}
		st, err := r.consume(ctx, w, cu, quietAfter)
		w = nil
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			d := r.clock.Since(start)
			if catching && cu.watching() && timeout > 0 {
				if !quietCatchUp(st, d, timeout) {
					cu.quiet = 0
				} else if cu.quiet++; cu.quiet >= quietCatchUps {
					return fmt.Errorf("watch %s from resourceVersion %s: %d watches in a row open %v with neither an event nor a bookmark: %w",
						r.opts.TypeDescription, r.LastSyncResourceVersion(), cu.quiet, d.Round(time.Millisecond), ErrNoCatchUpSignal)
				} else {
					logger.V(2).Info("The catch-up watch was silent for its whole timeout; watching again before concluding the server sends no bookmarks",
						"after", d.Round(time.Millisecond), "resourceVersion", r.LastSyncResourceVersion())
					continue
				}
			}
			if st.events == 0 && d < time.Second {
				// A watch that closes at once, again and again, must not
				// become a hot loop.
				r.watchAgainAfter(ctx, &cache.VeryShortWatchError{Name: r.opts.Name})
			} else {
				logger.V(4).Info("Watch closed; watching again", "events", st.events, "resourceVersion", r.LastSyncResourceVersion())
			}
			continue
		}
		if r.rewatchAfter(err) {
			r.watchAgainAfter(ctx, err)
			continue
		}
		return err
	}
}

// watchAgainAfter handles a watch that ended with err and is watched
// again from the same resourceVersion, without a relist: the handler
// sees err marked as such (watchEnded, which DefaultWatchErrorHandler
// logs at info level), then the reflector backs off.
func (r *Reflector) watchAgainAfter(ctx context.Context, err error) {
	r.handleError(ctx, watchEnded{err})
	r.sleep(ctx, r.retryDelay(err))
}

// rewatchAfter reports whether err only needs the watch to be retried
// from the last RV. It records internal errors against
// MaxInternalErrorRetryDuration and marks a too-large RV unavailable.
func (r *Reflector) rewatchAfter(err error) bool {
	r.internalErrs.After(err)
	switch classify(err) {
	case classRewatch:
		return true
	case classInternal:
		return r.internalErrs.ShouldRetry()
	case classTooLarge:
		r.setRVUnavailable(true)
	}
	return false
}

func isInternal(err error) bool { return apierrors.IsInternalError(err) }

// consume pushes w's events into the Sink until w closes, fails or ctx is
// done, and stops w. It returns what it pushed; a nil error means w
// closed cleanly.
//
// While cu.pending (a warm start not yet synced), w resumed from the
// persisted RV and may yet report it expired: kube-apiserver answers such
// a watch with HTTP 200, then an ERROR event (410) at once, and then
// consume returns the error without MarkSynced (the relist that follows
// syncs). Otherwise consume pushes MarkSynced, and clears cu.pending:
//
//   - catchUpTarget: just after the first event or bookmark at or past
//     the server's resourceVersion at the resume check, or after the
//     event that brought the last object that differed at the resume
//     check's version check to its state there (cu.versions);
//   - catchUpOpen: at once (nothing is pending), unless an event is
//     already waiting, which decides first as after a timer;
//   - catchUpSettle (the last resort): just before the first event, or
//     once w has stayed open Options.ResumeSettle without an ERROR event.
//
// A w that fails or closes first leaves cu.pending set for the next
// watch. With quietAfter (a catch-up watch), a w that delivered nothing
// that long is ended as if it had closed.
func (r *Reflector) consume(ctx context.Context, w watch.Interface, cu *catchUp, quietAfter time.Duration) (watchStats, error) {
	defer w.Stop()
	var st watchStats
	// A catch-up watch the server keeps open past its timeout (a proxy
	// that drops timeoutSeconds) with nothing on it is ended here, as the
	// server would have: silent, it shows no bookmarks either way.
	var quiet <-chan time.Time
	if quietAfter > 0 {
		t := r.clock.NewTimer(quietAfter)
		defer t.Stop()
		quiet = t.C()
	}
	var settled <-chan time.Time
	if cu.pending {
		switch cu.mode {
		case catchUpOpen:
			now := make(chan time.Time)
			close(now)
			settled = now
		case catchUpSettle:
			t := r.clock.NewTimer(cu.settle)
			defer t.Stop()
			settled = t.C()
		}
	}
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-quiet:
			if st.events == 0 {
				klog.FromContext(ctx).V(2).Info("The catch-up watch stayed silent past its timeout; ending it", "after", quietAfter)
				return st, nil
			}
			quiet = nil
			continue
		case <-settled:
			settled = nil
			// An event already waiting decides first: select picks at
			// random among ready cases, and a 410 that is there must not
			// be preceded by MarkSynced. Any other event pushes
			// MarkSynced below; a close leaves the sync pending.
			select {
			case ev, ok = <-w.ResultChan():
			default:
				klog.FromContext(ctx).V(4).Info("Resumed watch open without error; synced")
				if err := r.markSynced(ctx, cu, ""); err != nil {
					return st, err
				}
				continue
			}
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return st, nil
		}
		if ev.Type == watch.Error {
			return st, fmt.Errorf("watch %s: %w", r.opts.TypeDescription, apierrors.FromObject(ev.Object))
		}
		if r.dropUnexpected(ctx, ev.Object) {
			continue
		}
		acc, err := meta.Accessor(ev.Object)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to understand watch event", "event", ev.Type)
			continue
		}
		rv := acc.GetResourceVersion()
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		default:
			utilruntime.HandleErrorWithContext(ctx, nil, "Unknown watch event", "event", ev.Type)
			continue
		}
		if cu.pending && cu.mode != catchUpTarget {
			// The server accepted the RV: the watch resumed.
			settled = nil
			if err := r.markSynced(ctx, cu, ""); err != nil {
				return st, err
			}
		}
		switch ev.Type {
		case watch.Added:
			err = r.sink.Add(ctx, ev.Object)
		case watch.Modified:
			err = r.sink.Update(ctx, ev.Object)
		case watch.Deleted:
			err = r.sink.Delete(ctx, ev.Object)
		case watch.Bookmark:
			err = r.sink.Bookmark(ctx, rv)
			st.bookmarks++
		}
		if err != nil {
			return st, fmt.Errorf("%w: %s at resourceVersion %s: %w", ErrSink, ev.Type, rv, err)
		}
		r.setLastSyncResourceVersion(rv)
		st.events++
		if cu.reached(rv) || (cu.watching() && ev.Type != watch.Bookmark && cu.versions.applied(ctx, ev.Type, ev.Object, rv)) {
			if err := r.markSynced(ctx, cu, rv); err != nil {
				return st, err
			}
		}
	}
}

// markSynced pushes MarkSynced if cu.pending, and clears it: at most once
// per warm start, even when the Sink fails (the reflector then relists,
// and EndReplace completes the sync). at is the resourceVersion that
// showed the watch caught up, if any, for the log.
func (r *Reflector) markSynced(ctx context.Context, cu *catchUp, at string) error {
	if !cu.pending {
		return nil
	}
	cu.pending = false
	cu.versions = versionCheck{}
	klog.FromContext(ctx).V(2).Info("Warm start caught up with the server; synced",
		"mode", cu.mode.String(), "serverResourceVersion", cu.target, "at", at, "after", r.clock.Since(cu.started))
	if err := r.sink.MarkSynced(ctx); err != nil {
		return fmt.Errorf("%w: mark synced: %w", ErrSink, err)
	}
	return nil
}

var unsupportedTableGVK = map[schema.GroupVersionKind]bool{
	metav1beta1.SchemeGroupVersion.WithKind("Table"):     true,
	metav1.SchemeGroupVersion.WithKind("Table"):          true,
	metav1beta1.SchemeGroupVersion.WithKind("TableList"): true,
	metav1.SchemeGroupVersion.WithKind("TableList"):      true,
}

// dropUnexpected reports (and logs) a watch object of the wrong type, GVK
// or a Table, as client-go's reflector drops them.
func (r *Reflector) dropUnexpected(ctx context.Context, obj runtime.Object) bool {
	if obj == nil {
		utilruntime.HandleErrorWithContext(ctx, nil, "Watch event without object")
		return true
	}
	if r.expectedType != nil {
		if a := reflect.TypeOf(obj); a != r.expectedType {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object type", "expectedType", r.expectedType, "actualType", a)
			return true
		}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if r.opts.ExpectedGVK != nil && *r.opts.ExpectedGVK != gvk {
		utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object gvk", "expectedGVK", *r.opts.ExpectedGVK, "actualGVK", gvk)
		return true
	}
	if _, ok := obj.(*unstructured.Unstructured); ok && unsupportedTableGVK[gvk] {
		utilruntime.HandleErrorWithContext(ctx, nil, "Unsupported watch event object gvk", "actualGVK", gvk)
		return true
	}
	return false
}
