package reflector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// maxPageAlloc bounds the capacity allocated up front for a page, so a
// huge ListPageSize costs memory only when pages are that large.
const maxPageAlloc = 4096

// A WatchList's pages grow with the stream: a page holds at most
// 1/growthDivisor of the objects the stream has pushed before it, and at
// least minGrowingPage (never more than ListPageSize). The server sends
// the initial events as one stream, so the page is the reflector's own
// grouping, and every object in it is held decoded until the Sink takes
// the page: with pages of ListPageSize from the start, a resource of a few
// pages would be held whole, in the page being collected, the Sink's
// queue (which bounds its relist pages the same way: package deltafifo)
// and the batch being written, where client-go holds it once. Pages
// reach ListPageSize once the stream has pushed growthDivisor times that
// (4,000 objects by default), so a large resource pays a few more,
// smaller pages at its start, and a small one holds about three eighths
// of itself in flight at worst.
const (
	minGrowingPage = 64
	growthDivisor  = 8
)

// pager collects objects into pages of at most ListPageSize (growing
// ones when grow is set) and pushes each full page to the Sink as soon as
// it fills.
type pager struct {
	r      *Reflector
	grow   bool  // pages grow with pushed (a WatchList)
	pushed int64 // objects pushed so far
	page   []interface{}
}

// limit is the size of the page being collected.
func (p *pager) limit() int64 {
	if !p.grow {
		return p.r.opts.ListPageSize
	}
	return min(p.r.opts.ListPageSize, max(minGrowingPage, p.pushed/growthDivisor))
}

// progressEvery is how often, in objects received, a page being
// collected tells the relist's gate pass it moved (ListPass.Progress),
// besides every page pushed: a relist streaming from a slow server still
// holds its page, and counts.
const progressEvery = 64

func (p *pager) add(ctx context.Context, obj interface{}) error {
	if p.page == nil {
		p.page = make([]interface{}, 0, min(p.limit(), maxPageAlloc))
	}
	p.page = append(p.page, obj)
	if len(p.page)%progressEvery == 0 {
		p.r.pass.Progress()
	}
	if int64(len(p.page)) >= p.limit() {
		return p.flush(ctx)
	}
	return nil
}

func (p *pager) flush(ctx context.Context) error {
	if len(p.page) == 0 {
		return nil
	}
	page := p.page
	p.page = nil // the Sink owns it now
	p.pushed += int64(len(page))
	if err := p.r.sink.ReplacePage(ctx, page); err != nil {
		return fmt.Errorf("%w: replace page: %w", ErrSink, err)
	}
	p.r.pass.Progress()
	return nil
}

// list relists with paginated LIST requests, streaming each page into the
// Sink. When the RV it lists at is unavailable (410, or too large), it
// restarts once at once from the most recent state, as client-go does.
func (r *Reflector) list(ctx context.Context) error {
	err := r.listOnce(ctx)
	if err != nil && ctx.Err() == nil && (isExpired(err) || isTooLargeResourceVersion(err)) {
		klog.FromContext(ctx).V(2).Info("Listed resourceVersion is unavailable; listing the most recent state", "err", err)
		if isExpired(err) {
			r.metrics.Expired()
		}
		r.setRVUnavailable(true)
		err = r.listOnce(ctx)
	}
	return err
}

func (r *Reflector) listOnce(ctx context.Context) error {
	rv := r.relistResourceVersion()
	opts := metav1.ListOptions{ResourceVersion: rv, Limit: r.opts.ListPageSize}
	if rv != "" && rv != "0" {
		// Not older than the last RV we saw: served from the watch cache,
		// paginated, never back in time.
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	p := pager{r: r}
	listRV := ""
	for page := 1; ; page++ {
		r.metrics.ListRequested()
		obj, err := r.lw.ListWithContext(ctx, opts)
		if err != nil {
			return fmt.Errorf("list %s page %d (resourceVersion %q): %w", r.opts.TypeDescription, page, rv, err)
		}
		if ul, ok := obj.(*unstructured.UnstructuredList); ok && unsupportedTableGVK[ul.GroupVersionKind()] {
			return fmt.Errorf("list %s: %w: %v", r.opts.TypeDescription, ErrUnexpectedObject, ul.GroupVersionKind())
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return fmt.Errorf("list %s: %w: %T: %v", r.opts.TypeDescription, ErrUnexpectedObject, obj, err)
		}
		if page == 1 {
			// Open the replace only once the server answered, so that a
			// failing list leaves the Sink untouched.
			listRV = lm.GetResourceVersion()
			if err := r.beginReplace(ctx); err != nil {
				return err
			}
		}
		err = meta.EachListItemWithAlloc(obj, func(item runtime.Object) error {
			return p.add(ctx, item)
		})
		if err != nil {
			return fmt.Errorf("list %s page %d: %w", r.opts.TypeDescription, page, err)
		}
		cont := lm.GetContinue()
		if cont == "" {
			break
		}
		opts.Continue = cont
		opts.ResourceVersion = ""
		opts.ResourceVersionMatch = ""
	}
	if err := p.flush(ctx); err != nil {
		return err
	}
	if listRV == "" {
		return fmt.Errorf("list %s: %w", r.opts.TypeDescription, ErrNoResourceVersion)
	}
	return r.endReplace(ctx, listRV)
}

// watchList relists with a WatchList stream and returns the stream, open,
// to be consumed as the live watch. It restarts once at once from the most
// recent state when the RV is unavailable. A rejected or ignored request
// returns an error wrapping ErrWatchListUnsupported.
func (r *Reflector) watchList(ctx context.Context) (watch.Interface, error) {
	w, err := r.watchListOnce(ctx)
	if err != nil && ctx.Err() == nil && (isExpired(err) || isTooLargeResourceVersion(err)) {
		klog.FromContext(ctx).V(2).Info("Watch-list resourceVersion is unavailable; streaming the most recent state", "err", err)
		if isExpired(err) {
			r.metrics.Expired()
		}
		r.setRVUnavailable(true)
		w, err = r.watchListOnce(ctx)
	}
	if err != nil && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) {
		return nil, fmt.Errorf("%w: %w", ErrWatchListUnsupported, err)
	}
	return w, err
}

func (r *Reflector) watchListOnce(ctx context.Context) (_ watch.Interface, err error) {
	opts := metav1.ListOptions{
		ResourceVersion:      r.rewatchResourceVersion(),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       r.watchTimeout(),
	}
	r.metrics.WatchRequested(true)
	w, err := r.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch-list %s (resourceVersion %q): %w", r.opts.TypeDescription, opts.ResourceVersion, err)
	}
	defer func() {
		if err != nil {
			w.Stop()
		}
	}()
	if err := r.beginReplace(ctx); err != nil {
		return nil, err
	}
	p := pager{r: r, grow: true}
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return nil, fmt.Errorf("watch-list %s: %w", r.opts.TypeDescription, ErrWatchListIncomplete)
		}
		switch ev.Type {
		case watch.Error:
			return nil, fmt.Errorf("watch-list %s: %w", r.opts.TypeDescription, apierrors.FromObject(ev.Object))
		case watch.Added:
			if r.dropUnexpected(ctx, ev.Object) {
				continue
			}
			if err := p.add(ctx, ev.Object); err != nil {
				return nil, err
			}
		case watch.Bookmark:
			acc, err := meta.Accessor(ev.Object)
			if err != nil {
				return nil, fmt.Errorf("watch-list %s: bookmark: %w: %v", r.opts.TypeDescription, ErrUnexpectedObject, err)
			}
			if acc.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				return nil, fmt.Errorf("watch-list %s: %w: bookmark before the end of initial events", r.opts.TypeDescription, ErrWatchListUnsupported)
			}
			rv := acc.GetResourceVersion()
			if rv == "" {
				return nil, fmt.Errorf("watch-list %s: end bookmark: %w", r.opts.TypeDescription, ErrNoResourceVersion)
			}
			if err := p.flush(ctx); err != nil {
				return nil, err
			}
			if err := r.endReplace(ctx, rv); err != nil {
				return nil, err
			}
			return w, nil
		default:
			return nil, fmt.Errorf("watch-list %s: %w: %s event before the end of initial events", r.opts.TypeDescription, ErrWatchListUnsupported, ev.Type)
		}
	}
}
