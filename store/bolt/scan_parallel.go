package bolt

import (
	"context"
	"fmt"
	"sync"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// maxScanParallelism caps the n of ScanParallel: more decoders than that
// only add memory.
const maxScanParallelism = 64

// rawChunk is a chunk of items copied out of a read transaction, decoded by
// one decoder goroutine and then delivered by ScanParallel's caller.
type rawChunk struct {
	keys [][]byte // item keys, aliasing buf
	envs [][]byte // envelopes, aliasing buf
	buf  []byte

	// Set by the decoder before done is closed; bad may also be set by
	// the reader, for an item whose envelope cannot be read, which ends
	// the chunk and the scan.
	objs []keyObject
	bad  *keyError

	// err is a read error; the chunk is the last one and has no items.
	err  error
	done chan struct{}
}

// ScanParallel is Scan with the objects decoded by n goroutines (capped
// at 64): one goroutine copies chunks of scanChunk raw items out of short
// read transactions, n goroutines decode them, and fn is called on the
// calling goroutine, one call at a time, in key order, outside any
// transaction. At most n+2 chunks are in flight, so memory stays
// proportional to n chunks. It implements informer.ParallelScanner.
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
	n = min(n, maxScanParallelism)
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	window := n + 2
	slots := make(chan struct{}, window) // a token per chunk in flight
	order := make(chan *rawChunk, window)
	work := make(chan *rawChunk, window)

	wg.Add(1 + n)
	go func() {
		defer wg.Done()
		defer close(work)
		s.readChunks(rctx, op, slots, order, work)
	}()
	for range n {
		go func() {
			defer wg.Done()
			for {
				select {
				case c, ok := <-work:
					if !ok {
						return
					}
					s.decodeChunk(rctx, c)
				case <-rctx.Done():
					return
				}
			}
		}()
	}

	for {
		var c *rawChunk
		select {
		case c = <-order:
		case <-ctx.Done():
			return s.errorf(op, ctx.Err())
		}
		if c == nil { // order closed: every chunk was delivered
			return nil
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return s.errorf(op, ctx.Err())
		}
		if c.err != nil {
			return c.err
		}
		if c.bad != nil {
			s.corrupted(op, []keyError{*c.bad})
			return s.errorf(op, c.bad.err)
		}
		for _, ko := range c.objs {
			if err := ctx.Err(); err != nil {
				return s.errorf(op, err)
			}
			if err := fn(ko.key, ko.obj); err != nil {
				return err
			}
		}
		<-slots
	}
}

// readChunks copies the items in key order into chunks of scanChunk, each
// read in its own transaction, and hands each chunk to the decoders (work)
// and, in sequence, to the deliverer (order). It takes a slot before
// reading each chunk and closes order after the last one; a read error is
// sent as a final chunk. It returns when ctx is done.
func (s *Store) readChunks(ctx context.Context, op string, slots chan struct{}, order, work chan<- *rawChunk) {
	var after []byte
	size := 0 // bytes of the previous chunk: the next one's capacity
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		c := &rawChunk{done: make(chan struct{}), buf: make([]byte, 0, size+size/8),
			keys: make([][]byte, 0, scanChunk), envs: make([][]byte, 0, scanChunk)}
		last := true
		c.err = s.readLive(op, func(g *layout.Generation) error {
			cur := g.Items.Cursor()
			k, v := seekAfter(cur, after)
			for ; k != nil; k, v = cur.Next() {
				if len(c.keys) == scanChunk {
					last = false
					break
				}
				env, err := g.EnvelopeOf(k, v)
				if err != nil {
					c.bad = &keyError{string(k), err}
					break
				}
				start := len(c.buf)
				c.buf = append(c.buf, k...)
				c.buf = append(c.buf, env...)
				c.keys = append(c.keys, c.buf[start:start+len(k)])
				c.envs = append(c.envs, c.buf[start+len(k):])
			}
			return nil
		})
		if c.err != nil {
			c.keys, c.envs, c.buf = nil, nil, nil
			close(c.done)
			select {
			case order <- c:
			case <-ctx.Done():
			}
			return
		}
		// The slices into buf were taken while it grew: re-slice them
		// from the final buffer so that they share one allocation.
		off := 0
		for i := range c.keys {
			kl, vl := len(c.keys[i]), len(c.envs[i])
			c.keys[i] = c.buf[off : off+kl : off+kl]
			c.envs[i] = c.buf[off+kl : off+kl+vl : off+kl+vl]
			off += kl + vl
		}
		size = len(c.buf)
		if len(c.keys) > 0 {
			after = append(after[:0], c.keys[len(c.keys)-1]...)
		}
		select {
		case work <- c:
		case <-ctx.Done():
			return
		}
		select {
		case order <- c:
		case <-ctx.Done():
			return
		}
		if last {
			close(order)
			return
		}
	}
}

// decodeChunk decodes c's items until the first that fails, then releases
// the raw bytes and closes c.done. A panicking codec counts as a failed
// decode, so that bad data cannot crash the process from a goroutine the
// caller cannot recover.
func (s *Store) decodeChunk(ctx context.Context, c *rawChunk) {
	defer close(c.done)
	c.objs = make([]keyObject, 0, len(c.keys))
	for i, k := range c.keys {
		if ctx.Err() != nil {
			return // nobody waits for this chunk any more
		}
		obj, err := s.decodeGuarded(k, c.envs[i])
		if err != nil {
			c.bad = &keyError{string(k), err}
			break
		}
		c.objs = append(c.objs, keyObject{string(k), obj})
	}
	c.keys, c.envs, c.buf = nil, nil, nil
}

// decodeGuarded is readItem (without filling the object cache) with a
// panic turned into an error wrapping ErrCorrupt.
func (s *Store) decodeGuarded(k, env []byte) (obj interface{}, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, fmt.Errorf("%w: item %q: codec %s panicked: %v", ErrCorrupt, k, s.codec.Name(), r)
		}
	}()
	return s.readItem(k, env, false)
}
