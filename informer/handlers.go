package informer

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/tools/cache"
)

// AddEventHandler adds a handler with the informer's default resync
// period. See AddEventHandlerWithOptions.
func (i *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds a handler with its own resync
// period. See AddEventHandlerWithOptions.
func (i *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler, with client-go's semantics:
// a handler added before Run sees the initial list (on a warm start, the
// store once caught up with the server) as adds with isInInitialList true;
// a handler added later first gets the store's current content as such
// adds, then every change after it. A late handler is never told more than
// the others were: while a warm start's stored objects are withheld from
// the handlers (until the store has caught up, or for a file ahead of the
// server, pending the relist that tells them the server's state), it gets
// none of them, then the caught-up store or the relist's objects as adds
// with the others. Resync periods are adjusted as
// client-go does.
//
// The registration's HasSynced becomes true once the informer has synced
// and every initial-list add was delivered to this handler. A handler
// added after Run gets its replay from the informer's processing
// goroutine: the call returns at once (HasSynced false until the replay
// is delivered), so a handler may add handlers from its own callbacks.
// Only when 16 late handlers already wait for their replays does the
// call wait for the processing goroutine to serve one: goroutines that
// add handlers without end then pay for the replays they cause, as
// client-go's adders do, instead of holding up the watch. It never waits
// while the processing goroutine waits on a handler (so a callback that
// adds handlers cannot deadlock with a replay waiting for it), on the
// store's file check or to retry a failed write, nor before the warm
// start's replay is done.
//
// It returns an error matching ErrStopped, worded as client-go's ("...
// was not added to shared informer because it has stopped already"), once
// the informer has stopped.
func (i *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if handler == nil {
		return nil, fmt.Errorf("informer %s: add event handler: %w: nil handler", i.name, ErrInvalidOptions)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return nil, i.handlerStopped(handler)
	}
	logger := i.logger()
	if options.Logger != nil {
		logger = *options.Logger
	}
	resync := i.defaultResync
	if options.ResyncPeriod != nil {
		resync = *options.ResyncPeriod
	}
	if resync > 0 {
		if resync < minimumResyncPeriod {
			logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", resync, "minimumResyncPeriod", minimumResyncPeriod)
			resync = minimumResyncPeriod
		}
		if resync < i.resyncCheckPeriod {
			if i.started {
				logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", resync, "resyncCheckPeriod", i.resyncCheckPeriod)
				resync = i.resyncCheckPeriod
			} else {
				i.resyncCheckPeriod = resync
				i.proc.resyncCheckPeriodChanged(logger, resync)
			}
		}
	}
	name := fmt.Sprintf("%s + event handler %s", i.HasSyncedChecker().Name(), handlerName(handler))
	l := newListener(logger, handler, name, resync, determineResyncPeriod(logger, resync, i.resyncCheckPeriod), i.opts.Clock)
	if !i.started {
		i.proc.add(l, true)
		return l, nil
	}
	// Late handler: the processing loop replays the store to it, then
	// activates it for live changes. The guard keeps HasSynced false
	// until that replay is delivered. With many waiting already, the
	// caller waits for room first.
	i.waitLateRoomLocked()
	if i.stopped {
		return nil, i.handlerStopped(handler)
	}
	l.tracker.Start()
	if !i.proc.add(l, false) {
		return nil, i.handlerStopped(handler)
	}
	i.late = append(i.late, l)
	if i.popCancel != nil {
		i.popCancel()
	}
	return l, nil
}

// RemoveEventHandler removes a handler: it gets no notification after the
// one it is handling, if any, and its queued ones are dropped. It is
// idempotent; a handle of another informer is ignored, one of another
// package returns ErrInvalidRegistration.
func (i *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	l, ok := handle.(*listener)
	if !ok {
		return fmt.Errorf("informer %s: remove event handler %T: %w", i.name, handle, ErrInvalidRegistration)
	}
	// A late handler not served yet leaves the late list now: handlers
	// added and removed in a loop must not pile up there.
	i.mu.Lock()
	if n := len(i.late); n > 0 {
		i.late = slices.DeleteFunc(i.late, func(x *listener) bool { return x == l })
		if len(i.late) == 0 {
			i.late = nil
		}
		if len(i.late) < n {
			i.wakeLateLocked()
		}
	}
	i.mu.Unlock()
	i.proc.remove(l)
	return nil
}

// handlerStopped is the error of a handler added to a stopped informer,
// worded as client-go's (the handler named by its type).
func (i *Informer) handlerStopped(handler cache.ResourceEventHandler) error {
	return &stoppedError{fmt.Sprintf("informer %s: handler %s was not added to shared informer because it has stopped already", i.name, handlerName(handler))}
}

// handlerName names a handler in logs.
func handlerName(h cache.ResourceEventHandler) string { return fmt.Sprintf("%T", h) }
