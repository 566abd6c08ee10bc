package reflector

import "context"

// Sink receives what the reflector observes. deltafifo.Queue implements
// it (and ReplaceAborter).
//
// Calls come from the goroutine running Reflector.Run, one at a time, in
// the order of the stream. Every method may block (backpressure) and must
// return ctx's error promptly once ctx is done.
//
// The reflector pushes three kinds of sequences:
//
//   - A relist: BeginReplace, then zero or more ReplacePage calls, then
//     EndReplace(rv). The pages together are the complete state at rv; the
//     objects' own RVs are in no particular order and do not advance the
//     Sink's RV, EndReplace does. A relist may restart midway (an expired
//     continue token, a WatchList stream that failed or that the server
//     turned out not to support, a list error followed by a backoff): a
//     Sink that implements ReplaceAborter gets AbortReplace before the new
//     BeginReplace; for any other Sink, a BeginReplace while a replace is
//     open must abandon the open one and everything it staged. Add,
//     Update, Delete, Bookmark and MarkSynced are never pushed while a
//     replace is open.
//   - A live watch: Add, Update, Delete and Bookmark in stream order, with
//     increasing RVs. Delete carries the object's last state as the server
//     sent it. Bookmark(rv) is an ordered marker: every change up to rv was
//     pushed before it.
//   - A warm start: Add, Update, Delete and Bookmark of the watch resumed
//     from the persisted RV (the changes made while the reflector was
//     down), then MarkSynced, at most once per Run, once the watch has
//     caught up with the server's RV read by the resume check: just after
//     the first event or bookmark at or past it, or before anything else
//     when the stored RV is the server's. (Without an RV to reach, the
//     resume check off or RVs that cannot be compared: just before the
//     first event, or once the watch stayed open Options.ResumeSettle
//     without an ERROR event.) A watch from an expired RV (410, as a
//     failed request or as kube-apiserver's immediate ERROR event) never
//     pushes MarkSynced: the reflector relists, and that relist's
//     EndReplace completes the sync instead, as does the relist after a
//     catch-up watch that showed no bookmarks (ErrNoCatchUpSignal). A
//     resumed watch that closes or fails transiently first leaves
//     MarkSynced to the next watch from the last RV. After MarkSynced,
//     the watch may still end with a 410 later on, which leads to an
//     ordinary relist.
//
// Ownership: objects and slices passed to the Sink belong to it; the
// reflector never reads or changes them afterwards.
//
// Errors: a Sink error other than ctx's makes the reflector stop the
// watch, back off and relist, since the Sink may have missed an event.
type Sink interface {
	Add(ctx context.Context, obj interface{}) error
	Update(ctx context.Context, obj interface{}) error
	Delete(ctx context.Context, obj interface{}) error
	Bookmark(ctx context.Context, rv string) error
	BeginReplace(ctx context.Context) error
	ReplacePage(ctx context.Context, objs []interface{}) error
	EndReplace(ctx context.Context, rv string) error
	MarkSynced(ctx context.Context) error
}

// ReplaceAborter is an optional interface of a Sink. When the Sink
// implements it, the reflector calls AbortReplace whenever it abandons an
// open relist: when a relist fails (before backing off), before a
// BeginReplace that restarts a relist midway, and when Run returns with a
// relist open. The Sink can then drop staged pages at once, and may
// refuse a BeginReplace while a replace is open.
type ReplaceAborter interface {
	AbortReplace() error
}

// Metrics receives counts of the reflector's activity. Methods are called
// from the goroutine running Run and must not block.
type Metrics interface {
	// ListRequested is called before each LIST request (each page is
	// one).
	ListRequested()
	// WatchRequested is called before each WATCH request; watchList is
	// true for a WatchList (sendInitialEvents) request.
	WatchRequested(watchList bool)
	// RelistStarted is called when a relist begins, whatever its cause.
	RelistStarted()
	// Resumed is called when a warm start resumes the watch from a
	// persisted resourceVersion.
	Resumed()
	// Expired is called for each 410 Gone/Expired answer.
	Expired()
}

// NoopMetrics is the default Metrics: it does nothing.
type NoopMetrics struct{}

// ListRequested implements Metrics.
func (NoopMetrics) ListRequested() {}

// WatchRequested implements Metrics.
func (NoopMetrics) WatchRequested(bool) {}

// RelistStarted implements Metrics.
func (NoopMetrics) RelistStarted() {}

// Resumed implements Metrics.
func (NoopMetrics) Resumed() {}

// Expired implements Metrics.
func (NoopMetrics) Expired() {}
