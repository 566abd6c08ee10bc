package kubeserver

import (
	"context"
	"fmt"
	"time"
)

// cachePoll is how often waitWatchCache reads the apiserver's metrics.
const cachePoll = 50 * time.Millisecond

// waitWatchCache waits until the apiserver's watch cache of pods has been
// initialised since it started (apiserver_watch_cache_initializations_total,
// which begins at zero with each apiserver), so that a relist that follows
// is served by the watch cache, as by a running apiserver, not by etcd
// while the cache lists it.
func (s *Server) waitWatchCache(ctx context.Context) error {
	t := time.NewTicker(cachePoll)
	defer t.Stop()
	for {
		n, err := s.env.MetricSum(ctx, "apiserver_watch_cache_initializations_total", map[string]string{"resource": "pods"})
		if err != nil {
			return err
		}
		if n >= 1 {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: wait for the watch cache of pods: %w", ErrServer, ctx.Err())
		}
	}
}
