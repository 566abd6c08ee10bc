package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/internal/fakesource"
)

// clientWatchDecoding returns the error a watch of client-go's REST
// client ends with when reading its stream failed with msg: the Error
// event its StreamWatcher sends, as the reflector receives it.
func clientWatchDecoding(msg string) error {
	reporter := apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")
	return apierrors.FromObject(reporter.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %v", errors.New(msg))))
}

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("watch pods: %w", err) }
	oldTooLarge := apierrors.NewTimeoutError("Too large resource version: 10, current: 5", 1)
	cases := []struct {
		name string
		err  error
		want errClass
	}{
		{"410 Expired", wrap(fakesource.Expired("too old")), classExpired},
		{"410 Gone (servers before 1.18)", wrap(apierrors.NewGone("gone")), classExpired},
		{"too large RV", wrap(fakesource.TooLargeResourceVersion(10, 5)), classTooLarge},
		{"too large RV, message only", wrap(oldTooLarge), classTooLarge},
		{"429", wrap(fakesource.TooManyRequests(3)), classRewatch},
		{"connection refused", wrap(fakesource.ConnectionRefused()), classRewatch},
		{"unexpected EOF", wrap(io.ErrUnexpectedEOF), classRewatch},
		{"client timeout", wrap(context.DeadlineExceeded), classRewatch},
		{"503", wrap(apierrors.NewServiceUnavailable("starting")), classRewatch},
		{"500", wrap(fakesource.InternalError("boom")), classInternal},
		{"lost HTTP/2 connection, as client-go's watch reports it", wrap(clientWatchDecoding("http2: client connection lost")), classRewatch},
		{"undecodable event", wrap(clientWatchDecoding("proto: cannot parse invalid wire-format data")), classInternal},
		{"sink", fmt.Errorf("%w: add: %w", ErrSink, errors.New("disk full")), classRelist},
		{"sink with a 500 inside", fmt.Errorf("%w: %w", ErrSink, fakesource.InternalError("x")), classRelist},
		{"sink with a 410 inside", fmt.Errorf("%w: %w", ErrSink, fakesource.Expired("x")), classRelist},
		{"403", wrap(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("rbac"))), classRelist},
		{"unknown", errors.New("something else"), classRelist},
		{"invalid", wrap(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", nil)), classRelist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.err); got != tc.want {
				t.Fatalf("classify(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}
