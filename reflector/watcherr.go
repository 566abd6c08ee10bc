package reflector

import (
	"context"
	"errors"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// watchEnded marks an error that ended a watch (or its request) which is
// then watched again from its resourceVersion, without a relist: a lost
// or reset connection, a timeout, a 429 or 503, a retried internal
// error, a watch the server closed at once. It wraps the error, which is
// what Error, errors.Is and errors.As see.
type watchEnded struct{ error }

func (e watchEnded) Unwrap() error { return e.error }

// DefaultWatchErrorHandler is the reflector's default
// Options.WatchErrorHandler: client-go's cache.DefaultWatchErrorHandler,
// except for an error after which the reflector only watches again from
// its resourceVersion. client-go's reflector logs the end of such a watch
// at info level ("Warning: watch ended with error") or below, without
// calling its handler; the reflector calls the handler for it, and this
// one logs that line at that level, so that an apiserver's restart or a
// load balancer's idle timeout is not an error in the controller's log.
// Every other error (a 410, a failed list, a 403) goes to client-go's
// handler, which logs it as an error.
func DefaultWatchErrorHandler(ctx context.Context, r *cache.Reflector, err error) {
	var ended watchEnded
	if errors.As(err, &ended) {
		klog.FromContext(ctx).Info("Warning: watch ended with error", "reflector", r.Name(), "type", r.TypeDescription(), "err", ended.error)
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}
