package bolt

import (
	"context"
	"fmt"
	"sync"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/match"
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

// ScanParallel is Scan with the reading and decoding of the next chunk
// overlapping the calls of fn: one goroutine walks the items as Scan does,
// each chunk of 256 objects decoded inside its short read
// transaction by up to n goroutines (capped at 64), from the stored bytes
// without copying them, and fn is called on the calling goroutine, one
// call at a time, in key order, outside any transaction. At most three
// chunks are alive (one delivered, one ready, one being decoded), so
// memory stays proportional to a chunk. It implements
// informer.ParallelScanner.
//
// The results, errors and corruption handling are those of Scan: it stops
// at the first error fn returns and returns it unchanged; an object that
// cannot be decoded stops the scan, before the objects of its chunk are
// delivered, with an error wrapping ErrCorrupt, and marks the resource
// incomplete. A cancelled ctx returns an error wrapping ctx.Err(). Every
// goroutine it starts has exited when it returns. n < 1 returns an error
// wrapping ErrInvalidOptions.
func (s *Store) ScanParallel(ctx context.Context, n int, fn store.ScanFunc) error {
	const op = "scan"
	if n < 1 {
		return s.errorf(op, fmt.Errorf("%w: parallelism %d, want at least 1", ErrInvalidOptions, n))
	}
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	ready := make(chan walked, 1)
	w := selectWalk{s: s, m: match.New(store.Selection{}), workers: min(n, maxScanParallelism)}
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
			return nil
		}
	}
}
