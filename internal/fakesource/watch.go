package fakesource

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchWithContext implements cache.WatcherWithContext with
// kube-apiserver's semantics (see the package documentation). The watch
// ends when it is stopped, ctx is done, ListOptions.TimeoutSeconds pass on
// Options.Clock, an injected fault ends it or the source restarts.
func (e *Endpoint) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s := e.src
	s.mu.Lock()
	defer s.mu.Unlock()
	watchList := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	req := Request{Verb: verbWatch, GVK: e.gvk, Namespace: e.namespace, Options: opts}
	w, err := e.watchLocked(ctx, opts)
	req.Err = err
	s.recordLocked(req, watchList)
	if err != nil {
		return nil, err
	}
	s.watchers[w] = struct{}{}
	s.counts[e.gvk].OpenWatches++
	go w.run()
	return w, nil
}

func (e *Endpoint) watchLocked(ctx context.Context, opts metav1.ListOptions) (*watcher, error) {
	s := e.src
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fault, hasFault := s.takeFaultLocked(verbWatch)
	if hasFault && fault.Err != nil {
		return nil, fault.Err
	}
	opts.Watch = true
	if s.mode == WatchListIgnored {
		opts.SendInitialEvents = nil
		opts.ResourceVersionMatch = ""
	}
	flt, err := e.validate(opts, s.mode != WatchListRejected)
	if err != nil {
		return nil, err
	}
	w := &watcher{
		src:            s,
		ep:             e,
		flt:            flt,
		result:         make(chan watch.Event),
		stopCh:         make(chan struct{}),
		done:           make(chan struct{}),
		ctxDone:        ctx.Done(),
		epoch:          s.epoch,
		restarted:      s.restarted,
		allowBookmarks: opts.AllowWatchBookmarks,
	}
	if hasFault {
		w.fault = &fault
	}
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		w.timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	sendInitial := opts.SendInitialEvents
	switch {
	case sendInitial != nil && *sendInitial:
		// WatchList: the current state (not older than RV), then a
		// bookmark marking its end.
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			if _, err := s.requestedRVLocked(opts.ResourceVersion); err != nil {
				return nil, err
			}
		}
		e.initialEventsLocked(w)
		w.endBookmark = opts.AllowWatchBookmarks
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		w.cursor = s.rv
		if sendInitial == nil {
			e.initialEventsLocked(w)
		}
	default:
		rv, err := s.requestedRVLocked(opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		if rv < s.compacted {
			expired := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, s.compacted))
			if s.expiredAsError {
				return nil, expired
			}
			ev := statusEvent(expired)
			w.terminal = &ev
		}
		w.cursor = rv
	}
	return w, nil
}

// initialEventsLocked queues synthetic ADDED events for the current state
// and places the watch's cursor at the current RV.
func (e *Endpoint) initialEventsLocked(w *watcher) {
	s := e.src
	for _, k := range s.sortedKeysLocked(e.gvk) {
		if obj := s.versionAtLocked(k, s.rv); obj != nil && w.flt.matches(obj) {
			w.initial = append(w.initial, obj)
		}
	}
	w.cursor = s.rv
	w.initialRV = s.rv
}

// watcher is one open watch. Its goroutine (run) pulls events from the
// source's history, so producers never block on a slow consumer.
type watcher struct {
	src      *Source
	ep       *Endpoint
	flt      filter
	result   chan watch.Event
	stopOnce sync.Once
	stopCh   chan struct{} // closed by Stop
	done     chan struct{} // closed when run has returned
	ctxDone  <-chan struct{}
	timeout  time.Duration
	epoch    uint64
	// restarted is closed when the source restarts.
	restarted <-chan struct{}

	// Guarded by src.mu.
	allowBookmarks  bool
	cursor          int64            // every change up to cursor was examined
	initial         []runtime.Object // synthetic ADDED events still to send
	initialRV       int64
	endBookmark     bool         // send the initial-events-end bookmark
	terminal        *watch.Event // send this, then close
	bookmarkPending bool
	fault           *Fault
	sent            int
	closing         bool // the last event was sent; close next
}

var _ watch.Interface = (*watcher)(nil)

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface. It returns once the result channel is
// closed and the watch's goroutine has exited.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stopCh) })
	<-w.done
}

func (w *watcher) run() {
	defer close(w.done)
	defer close(w.result)
	defer w.src.removeWatcher(w)
	var timeoutC <-chan time.Time
	if w.timeout > 0 {
		t := w.src.clock.NewTimer(w.timeout)
		defer t.Stop()
		timeoutC = t.C()
	}
	// kube-apiserver's watch cache sends a watch that allows bookmarks a
	// bookmark at its current RV 2s before the watch's timeout (none when
	// that moment has passed, so none for a timeout under 3s).
	var preTimeoutC <-chan time.Time
	if w.allowBookmarks && !w.src.disableCache && w.timeout >= 3*time.Second {
		t := w.src.clock.NewTimer(w.timeout - 2*time.Second)
		defer t.Stop()
		preTimeoutC = t.C()
	}
	var tickC <-chan time.Time
	if w.allowBookmarks && w.src.bookmarkInterval > 0 {
		t := w.src.clock.NewTicker(w.src.bookmarkInterval)
		defer t.Stop()
		tickC = t.C()
	}
	// ev is the event being sent while have is set; otherwise the watch
	// waits on wake for the source's next change.
	var ev watch.Event
	have := false
	for {
		var wake <-chan struct{}
		if !have {
			var ok bool
			if ev, ok, wake = w.next(); !ok && wake == nil {
				return
			}
			have = ok
		}
		var out chan<- watch.Event
		if have {
			out = w.result
		}
		select {
		case out <- ev:
			have = false
		case <-wake:
		case <-tickC:
			w.requestBookmark()
		case <-preTimeoutC:
			preTimeoutC = nil
			w.requestBookmark()
		case <-w.stopCh:
			return
		case <-w.ctxDone:
			return
		case <-w.restarted:
			return
		case <-timeoutC:
			return
		}
	}
}

func (w *watcher) requestBookmark() {
	w.src.mu.Lock()
	defer w.src.mu.Unlock()
	w.bookmarkPending = true
}

// next returns the next event to send. When there is none it returns
// ok=false and a channel closed on the source's next change, or a nil
// channel when the watch must close.
func (w *watcher) next() (ev watch.Event, ok bool, wake <-chan struct{}) {
	s := w.src
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.closing || w.epoch != s.epoch {
		return ev, false, nil
	}
	if f := w.fault; f != nil && w.sent >= f.AfterEvents {
		switch f.End {
		case EndDecodeError:
			ev = watch.Event{Type: watch.Error, Object: decodeErrorObject()}
		case EndExpired:
			ev = statusEvent(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", w.cursor, s.compacted)))
		default:
			return ev, false, nil
		}
		w.closing = true
		return ev, true, nil
	}
	ev, ok = w.nextLocked()
	if !ok {
		return ev, false, s.notify
	}
	w.sent++
	return ev, true, nil
}

func (w *watcher) nextLocked() (watch.Event, bool) {
	s := w.src
	if w.terminal != nil {
		w.closing = true
		return *w.terminal, true
	}
	if len(w.initial) > 0 {
		obj := w.initial[0]
		w.initial[0] = nil
		w.initial = w.initial[1:]
		return watch.Event{Type: watch.Added, Object: obj.DeepCopyObject()}, true
	}
	if w.endBookmark {
		w.endBookmark = false
		return watch.Event{Type: watch.Bookmark, Object: s.bookmark(w.ep.gvk, w.initialRV, true)}, true
	}
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].rv > w.cursor })
	for ; i < len(s.log); i++ {
		e := s.log[i]
		w.cursor = e.rv
		if e.key.gvk != w.ep.gvk {
			continue
		}
		if ev, ok := w.convert(e); ok {
			return ev, true
		}
	}
	if w.bookmarkPending && w.allowBookmarks {
		w.bookmarkPending = false
		return watch.Event{Type: watch.Bookmark, Object: s.bookmark(w.ep.gvk, s.rv, false)}, true
	}
	return watch.Event{}, false
}

// convert turns a change into the event this watch sees, applying its
// selectors as kube-apiserver's cacher does: an object leaving the
// selection is a deletion, one entering it an addition.
func (w *watcher) convert(e event) (watch.Event, bool) {
	cur := w.flt.matches(e.obj)
	prev := e.prev != nil && w.flt.matches(e.prev)
	switch {
	case e.typ == watch.Deleted:
		if !cur {
			return watch.Event{}, false
		}
		return watch.Event{Type: watch.Deleted, Object: e.obj.DeepCopyObject()}, true
	case cur && !prev:
		return watch.Event{Type: watch.Added, Object: e.obj.DeepCopyObject()}, true
	case cur && prev:
		return watch.Event{Type: watch.Modified, Object: e.obj.DeepCopyObject()}, true
	case !cur && prev:
		old := e.prev.DeepCopyObject()
		if acc, err := meta.Accessor(old); err == nil {
			acc.SetResourceVersion(strconv.FormatInt(e.rv, 10))
		}
		return watch.Event{Type: watch.Deleted, Object: old}, true
	}
	return watch.Event{}, false
}

func (s *Source) removeWatcher(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watchers, w)
	s.counts[w.ep.gvk].OpenWatches--
	s.trimLogLocked()
	s.broadcastLocked()
}
