package fakesource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// StreamEnd says how an injected watch fault ends the stream.
type StreamEnd int

const (
	// EndClose closes the result channel, as when the connection drops.
	EndClose StreamEnd = iota
	// EndDecodeError sends the ERROR event client-go's StreamWatcher emits
	// when it cannot decode the stream (500, reason InternalError), then
	// closes.
	EndDecodeError
	// EndExpired sends a 410 Expired ERROR event, then closes, as
	// kube-apiserver does to a watch that fell out of history.
	EndExpired
)

// Fault is one injected failure.
type Fault struct {
	// Err, when set, fails the request itself: List or Watch returns Err.
	Err error
	// AfterEvents and End apply to watches when Err is nil: the watch
	// opens, delivers AfterEvents events (of any type, bookmarks and
	// synthetic ADDED events included), then ends as End says.
	AfterEvents int
	End         StreamEnd
}

const (
	verbList  = "list"
	verbWatch = "watch"
)

// FailLists makes the next n LIST requests (of any kind) fail with err.
// Faults queue up behind those already injected.
func (s *Source) FailLists(n int, err error) {
	s.inject(verbList, n, Fault{Err: err})
}

// FailWatches makes the next n WATCH requests (of any kind, WatchList
// included) fail as f says. Faults queue up behind those already injected.
func (s *Source) FailWatches(n int, f Fault) {
	s.inject(verbWatch, n, f)
}

func (s *Source) inject(verb string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[verb] = append(s.faults[verb], f)
	}
}

// takeFaultLocked pops the next fault for verb.
func (s *Source) takeFaultLocked(verb string) (Fault, bool) {
	q := s.faults[verb]
	if len(q) == 0 {
		return Fault{}, false
	}
	s.faults[verb] = q[1:]
	return q[0], true
}

// TooManyRequests returns the 429 kube-apiserver's priority and fairness
// answers with, carrying a Retry-After of retryAfterSeconds.
func TooManyRequests(retryAfterSeconds int) error {
	return apierrors.NewTooManyRequests("the server has received too many requests and has asked us to try again later", retryAfterSeconds)
}

// ConnectionRefused returns the error client-go's REST client returns
// when nothing listens on the apiserver's address.
func ConnectionRefused() error {
	return &url.Error{Op: "Get", URL: "https://fakesource.invalid/api", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}}
}

// InternalError returns a 500 InternalError.
func InternalError(msg string) error {
	return apierrors.NewInternalError(fmt.Errorf("%s", msg))
}

// Expired returns the 410 Expired kube-apiserver answers for a compacted
// resourceVersion.
func Expired(msg string) error {
	return apierrors.NewResourceExpired(msg)
}

// TooLargeResourceVersion returns the 504 kube-apiserver answers when the
// requested resourceVersion is ahead of what it has seen (cause
// ResourceVersionTooLarge, as k8s.io/apiserver's storage package builds it).
func TooLargeResourceVersion(requested, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// decodeErrorObject is the ERROR event object client-go's StreamWatcher
// emits when it cannot decode an event.
func decodeErrorObject() runtime.Object {
	return apierrors.NewClientErrorReporter(500, "GET", "ClientWatchDecoding").
		AsObject(fmt.Errorf("unable to decode an event from the watch stream: %v", "fakesource: injected decode error"))
}

// statusEvent wraps an API error as a watch ERROR event.
func statusEvent(err error) watch.Event {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		status := st.Status()
		return watch.Event{Type: watch.Error, Object: &status}
	}
	return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}}
}

// Counts counts requests and open watches.
type Counts struct {
	// Lists counts LIST requests (each page is one), failed ones included.
	Lists int
	// Watches counts WATCH requests, WatchList ones and failed ones
	// included.
	Watches int
	// WatchLists counts WATCH requests with sendInitialEvents=true.
	WatchLists int
	// OpenWatches is the number of watches whose result channel is open.
	OpenWatches int
}

func (c *Counts) add(o Counts) {
	c.Lists += o.Lists
	c.Watches += o.Watches
	c.WatchLists += o.WatchLists
	c.OpenWatches += o.OpenWatches
}

// Stats is a snapshot of the source's counters.
type Stats struct {
	// Counts totals every kind.
	Counts
	// ByKind has one entry per kind that was requested.
	ByKind map[schema.GroupVersionKind]Counts
	// ResourceVersion is the source's current RV.
	ResourceVersion int64
}

// Request records one LIST or WATCH request.
type Request struct {
	// Verb is "list" or "watch".
	Verb      string
	GVK       schema.GroupVersionKind
	Namespace string
	Options   metav1.ListOptions
	// Err is the error the request failed with at once; nil for a watch
	// that opened (even one that will deliver an ERROR event).
	Err error
}

// Stats returns a snapshot of the counters.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsLocked()
}

func (s *Source) statsLocked() Stats {
	st := Stats{ByKind: map[schema.GroupVersionKind]Counts{}, ResourceVersion: s.rv}
	for gvk, c := range s.counts {
		st.ByKind[gvk] = *c
		st.add(*c)
	}
	return st
}

// Requests returns every request received so far, in order.
func (s *Source) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitFor blocks until cond returns true for the source's stats, or ctx
// is done. cond is evaluated after every change to the source, with the
// source locked: it must not call the Source.
func (s *Source) WaitFor(ctx context.Context, cond func(Stats) bool) error {
	for {
		s.mu.Lock()
		ok := cond(s.statsLocked())
		ch := s.notify
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakesource: wait: %w", ctx.Err())
		}
	}
}

// recordLocked counts a request.
func (s *Source) recordLocked(r Request, watchList bool) {
	c := s.counts[r.GVK]
	if c == nil {
		c = &Counts{}
		s.counts[r.GVK] = c
	}
	if r.Verb == verbList {
		c.Lists++
	} else {
		c.Watches++
		if watchList {
			c.WatchLists++
		}
	}
	s.requests = append(s.requests, r)
	s.broadcastLocked()
}
