package reflector

import (
	"context"
	"errors"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Errors the reflector passes to the WatchErrorHandler (wrapped with the
// operation); test with errors.Is.
var (
	// ErrWatchListUnsupported: the server rejected a WatchList request
	// (400/422) or answered it like a legacy watch (a bookmark without the
	// initial-events-end annotation, or a MODIFIED or DELETED event before
	// it). The reflector falls back to LIST for the rest of its Run.
	//
	// This error, ErrWatchListIncomplete and every other error of a
	// WatchList request are logged, not passed to the WatchErrorHandler:
	// the relist goes on at once with a LIST, whose own errors are (or,
	// after a 429 or a refused connection, with the WatchList again after
	// a backoff, as client-go does).
	ErrWatchListUnsupported = errors.New("server does not support WatchList")
	// ErrWatchListIncomplete: a WatchList stream closed before its
	// initial-events-end bookmark; that relist goes on with a LIST.
	ErrWatchListIncomplete = errors.New("watch-list stream ended before its initial events were complete")
	// ErrNoResourceVersion: a list response or the WatchList end bookmark
	// carried no resourceVersion, so the reflector cannot watch from it.
	ErrNoResourceVersion = errors.New("server response has no resourceVersion")
	// ErrUnexpectedObject: a list response was not a list, or was a Table.
	ErrUnexpectedObject = errors.New("unexpected object from the server")
	// ErrSink: the Sink returned an error (wrapped after this one).
	ErrSink = errors.New("sink failed")
)

// isExpired reports a 410, as client-go's isExpiredError does (servers
// before 1.18 used reason Gone).
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersion follows client-go's
// isTooLargeResourceVersionError, older servers' messages included.
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Message == "Too large resource version" {
			return true
		}
	}
	return strings.Contains(st.Status().Message, "Too large resource version")
}

// errClass is what the reflector does after an error.
type errClass int

const (
	// classRelist: back off, then relist.
	classRelist errClass = iota
	// classExpired: relist, backing off only if the previous relist was
	// recent.
	classExpired
	// classTooLarge: relist from the most recent state, after a backoff.
	classTooLarge
	// classRewatch: back off, then watch again from the last RV.
	classRewatch
	// classInternal: a 500; rewatch or relist depending on
	// MaxInternalErrorRetryDuration.
	classInternal
)

// classify sorts a list or watch error.
func classify(err error) errClass {
	switch {
	case errors.Is(err, ErrSink):
		// Whatever the Sink's error wraps, it may have missed an event.
		return classRelist
	case isExpired(err):
		return classExpired
	case isTooLargeResourceVersion(err):
		return classTooLarge
	case apierrors.HasStatusCause(err, causeClientWatchDecoding) && isTransient(err):
		return classRewatch
	case apierrors.IsInternalError(err):
		return classInternal
	case isTransient(err):
		return classRewatch
	}
	return classRelist
}

// causeClientWatchDecoding is the cause of the 500 that client-go's REST
// client makes of a watch stream it could not read (rest.Request.Watch's
// error reporter), where a lost HTTP/2 connection ends a watch: the
// client's error, not the server's, which isTransient tells apart by its
// message.
const causeClientWatchDecoding metav1.CauseType = "ClientWatchDecoding"

// isTransient reports errors after which the server likely still has our
// resourceVersion: retrying the watch is enough.
func isTransient(err error) bool {
	return utilnet.IsConnectionRefused(err) ||
		utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) ||
		utilnet.IsTimeout(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		// A client-side request timeout; the caller checked that the
		// reflector's own context is not done.
		errors.Is(err, context.DeadlineExceeded) ||
		apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) ||
		apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err)
}
