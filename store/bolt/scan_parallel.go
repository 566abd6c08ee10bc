package bolt

import (
	"context"
	"fmt"
	"sync"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/headroom"
)

// maxScanParallelism caps the n of ScanParallel: more decoders than that
// only add memory.
const maxScanParallelism = 64

// walked is a chunk of a ScanParallel, or the error that ends it.
type walked struct {
	chunk []selected
	done  bool
	err   error
}

// replayHeadroom is the heap a ScanParallel of the store's objects lends
// the collector (Options.ReplayHeadroom).
func (s *Store) replayHeadroom() int64 {
	objects := int64(s.status.Load().meta.Objects)
	if objects < replayHeadroomFrom {
		return 0
	}
	return min(*s.db.opts.ReplayHeadroom, objects*replayHeadroomPerObject)
}

// ScanParallel is Scan with chunks decoded on up to n goroutines (at
// most 64) and fn called in key order on the calling goroutine (informer's
// ParallelScanner): at most three chunks alive, Options.ReplayHeadroom
// lent. Otherwise Scan's; n < 1 wraps ErrInvalidOptions.
func (s *Store) ScanParallel(ctx context.Context, n int, fn store.ScanFunc) error {
	const op = "scan"
	if n < 1 {
		return s.errorf(op, fmt.Errorf("%w: parallelism %d, want at least 1", ErrInvalidOptions, n))
	}
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	if done, err := s.walkHot(ctx, op, store.Selection{}, fn); done {
		return err
	}
	defer headroom.Lend(s.replayHeadroom())()
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	ready := make(chan walked, 1)
	w := s.newSelectWalk(store.Selection{})
	w.workers = min(n, maxScanParallelism)
	wg.Go(func() {
		defer close(ready)
		for {
			chunk, done, err := w.next(op)
			select {
			case ready <- walked{chunk, done, err}:
			case <-rctx.Done():
				return
			}
			if done || err != nil {
				return
			}
		}
	})
	for {
		var r walked
		var ok bool
		select {
		case r, ok = <-ready:
		case <-ctx.Done():
			return s.errorf(op, ctx.Err())
		}
		if !ok { // the walker saw ctx done first
			return s.errorf(op, context.Cause(rctx))
		}
		if r.err != nil {
			return r.err
		}
		for i := range r.chunk {
			if err := ctx.Err(); err != nil {
				return s.errorf(op, err)
			}
			if err := fn(r.chunk[i].key, r.chunk[i].obj); err != nil {
				return err
			}
		}
		if r.done {
			w.complete()
			return nil
		}
	}
}
