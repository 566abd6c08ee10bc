package storebench

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store"
)

// Relister is a store a relist can be written into (store.Store's
// BeginReplace).
type Relister interface {
	BeginReplace(ctx context.Context) (store.Replace, error)
}

// RelistPods writes pods 0..n-1 of internal/podgen into s as one relist
// committed at resourceVersion rv, in pages of page pods, and releases the
// content the commit retained. each, if not nil, is called with every pod
// and its number before the pod is written, and may change it. On an
// error the relist is aborted: s keeps its content.
func RelistPods(ctx context.Context, s Relister, n, page int, rv string, each func(i int, p *corev1.Pod)) error {
	if n <= 0 || page <= 0 {
		return fmt.Errorf("%w: relist of %d pods in pages of %d", ErrInvalidArgument, n, page)
	}
	r, err := s.BeginReplace(ctx)
	if err != nil {
		return fmt.Errorf("storebench: begin relist: %w", err)
	}
	objs := make([]interface{}, 0, page)
	for start := 0; start < n; start += page {
		objs = objs[:0]
		for i := start; i < min(start+page, n); i++ {
			p := podgen.Pod(i)
			if each != nil {
				each(i, p)
			}
			objs = append(objs, p)
		}
		if err := r.Add(ctx, objs...); err != nil {
			return errors.Join(fmt.Errorf("storebench: relist page at %d: %w", start, err), r.Abort())
		}
	}
	if err := r.Commit(ctx, rv); err != nil {
		return errors.Join(fmt.Errorf("storebench: commit relist: %w", err), r.Abort())
	}
	return r.Release()
}
