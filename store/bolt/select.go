package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/match"
)

var _ store.SelectStore = (*Store)(nil)

// selectExamine bounds the item entries a Select examines per read
// transaction, so that a selective read of a large store does not hold one
// transaction (and bbolt's mmap lock against a growing file) for the whole
// walk.
const selectExamine = 4096

// Select calls fn for every object sel selects, in key order
// (store.SelectStore), deciding from item entries, which record each
// object's namespace and labels: it decodes only what it returns. It reads
// and fails as Scan does; an unknown index wraps store.ErrIndexNotFound, and
// an object without metadata fails a selection by namespace or labels.
func (s *Store) Select(ctx context.Context, sel store.Selection, fn store.ScanFunc) error {
	return s.walk(ctx, "select", sel, fn)
}

// walk is Select, Scan and ScanIndex: the chunked read-then-decode loop,
// each chunk decoded on every core in its read transaction.
func (s *Store) walk(ctx context.Context, op string, sel store.Selection, fn store.ScanFunc) error {
	if err := ctx.Err(); err != nil {
		return s.errorf(op, err)
	}
	if sel.Index != "" {
		if _, err := s.indexFor(op, sel.Index); err != nil {
			return err
		}
	}
	if done, err := s.walkHot(ctx, op, sel, fn); done {
		return err
	}
	w := s.newSelectWalk(sel)
	for {
		if err := ctx.Err(); err != nil {
			return s.errorf(op, err)
		}
		chunk, done, err := w.next(op)
		if err != nil {
			return err
		}
		for i := range chunk {
			if err := ctx.Err(); err != nil {
				return s.errorf(op, err)
			}
			if err := fn(chunk[i].key, chunk[i].obj); err != nil {
				return err
			}
		}
		if done {
			w.complete()
			return nil
		}
	}
}

// walkHot is walk answered from the hot tier without reading the file,
// when the store's part holds every stored object (hot.Part.Whole) and
// sel selects by namespace at most, with a key function whose keys start
// with the namespace: it calls fn as walk would, outside any lock, and
// returns true. Otherwise it calls nothing and returns false.
func (s *Store) walkHot(ctx context.Context, op string, sel store.Selection, fn store.ScanFunc) (bool, error) {
	if s.hot == nil || s.closed.Load() || sel.Index != "" || (sel.Labels != nil && !sel.Labels.Empty()) {
		return false, nil
	}
	prefix := ""
	if sel.Namespace != "" {
		if !match.NamespaceKeys(s.keyFunc) {
			return false, nil
		}
		prefix = sel.Namespace + "/"
	}
	var found []keyObject
	if !s.hot.Whole(prefix, func(key string, obj interface{}) {
		if found == nil && prefix == "" {
			found = make([]keyObject, 0, s.sizeHint())
		}
		found = append(found, keyObject{key, obj})
	}) {
		return false, nil
	}
	for i, f := range found {
		if i%scanChunk == 0 {
			if err := ctx.Err(); err != nil {
				return true, s.errorf(op, err)
			}
		}
		if err := fn(f.key, f.obj); err != nil {
			return true, err
		}
	}
	return true, nil
}

// newSelectWalk returns the walk of sel, which fills the hot tier with
// what it decodes and, if sel selects every object, tells the tier when it
// has read them all (complete).
func (s *Store) newSelectWalk(sel store.Selection) *selectWalk {
	_, nsIndex := s.indexers.Load().pos[cache.NamespaceIndex]
	w := &selectWalk{s: s, m: match.New(sel), src: match.SourceOf(sel, s.keyFunc, nsIndex)}
	w.all = sel.Index == "" && sel.Namespace == "" && (sel.Labels == nil || sel.Labels.Empty())
	w.st = s.stamp()
	return w
}

// complete tells the hot tier that w has read every object, if w selects
// every object and returned every one (hot.Part.Complete).
func (w *selectWalk) complete() {
	if w.all {
		w.s.hot.Complete(w.st, w.n)
	}
}

// selectWalk is the position of a Select in its source, across read
// transactions.
type selectWalk struct {
	s   *Store
	m   *match.Matcher
	src match.Source
	// pos is the last cursor key examined (an object key in the items
	// bucket, an index key in an index), valid once started.
	pos     []byte
	started bool
	// workers decode each chunk; 0: GOMAXPROCS.
	workers int
	// sums checks the entries of an index source.
	sums layout.IndexSum
	// st is the hot tier's stamp before the walk's first transaction; all
	// is set if the walk selects every object, and n counts the objects
	// it returned (complete).
	st  hot.Stamp
	all bool
	n   int
}

// next examines up to selectExamine entries after w's position in one read
// transaction, decodes the objects selected among them (at most scanChunk)
// in that transaction on every core, as Scan decodes its chunk in its
// transaction (no copy of the stored bytes), and returns them and whether
// the source is exhausted.
func (w *selectWalk) next(op string) (chunk []selected, done bool, err error) {
	s := w.s
	var bad *keyError
	done = true
	st := s.stamp()
	err = s.readLive(op, func(g *layout.Generation) error {
		d := newChunkDecoder(s, w.workers)
		defer d.Stop() // no decode may outlive the transaction
		c, k, v, err := w.start(g)
		if err != nil {
			return err
		}
		for examined := 0; k != nil; k, v = c.Next() {
			key, entry, err := w.item(g, k, v)
			if errors.Is(err, ErrCorrupt) {
				bad = &keyError{string(key), err}
				return nil
			}
			if err != nil {
				return err
			}
			if key == nil {
				break
			}
			if examined == selectExamine || d.Len() == scanChunk {
				done = false
				break
			}
			examined++
			w.pos, w.started = append(w.pos[:0], k...), true
			id, ok, err := w.m.Match(key, entry)
			if err != nil {
				if errors.Is(err, ErrCorrupt) {
					bad = &keyError{string(key), err}
					return nil
				}
				return err
			}
			if !ok {
				continue
			}
			env, err := g.EnvelopeAt(key, id)
			if err != nil {
				bad = &keyError{string(key), err}
				return nil
			}
			d.Add(s.selectedToFill(string(key), key, env, st))
		}
		var errs []error
		chunk, errs = d.Finish()
		s.fillHot(chunk, errs, st)
		if errs != nil {
			bad = firstBad(chunk, errs)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if bad != nil {
		s.corrupted(op, []keyError{*bad})
		return nil, false, s.errorf(op, bad.err)
	}
	w.n += len(chunk)
	return chunk, done, nil
}

// start positions a cursor of w's source after w's position (at the start
// of the source if the walk has not started).
func (w *selectWalk) start(g *layout.Generation) (layout.Cursor, []byte, []byte, error) {
	var c layout.Cursor
	if w.src.Index == "" {
		c = g.Items.Cursor()
	} else {
		x, err := g.OpenIndex(w.src.Index)
		if err != nil {
			return nil, nil, nil, err
		}
		c, w.sums = x.B.Cursor(), x.Sums
	}
	if !w.started {
		if len(w.src.Prefix) == 0 {
			k, v := c.First()
			return c, k, v, nil
		}
		k, v := c.Seek(w.src.Prefix)
		return c, k, v, nil
	}
	k, v := c.Seek(w.pos)
	if k != nil && bytes.Equal(k, w.pos) {
		k, v = c.Next()
	}
	return c, k, v, nil
}

// item maps a cursor entry of w's source to an object key and item entry;
// a nil key is the end of the source. An index entry whose checksum does
// not match, or without its item, is an error wrapping ErrCorrupt, with
// the key it names.
func (w *selectWalk) item(g *layout.Generation, k, v []byte) ([]byte, []byte, error) {
	if !bytes.HasPrefix(k, w.src.Prefix) {
		return nil, nil, nil
	}
	if w.src.Index == "" {
		return k, v, nil
	}
	key := k[len(w.src.Prefix):]
	if err := w.sums.Verify(k, v); err != nil {
		value, _, _ := layout.SplitIndexKey(k, v)
		return key, nil, layout.IndexEntryError(w.src.Index, value, string(key), err)
	}
	entry := g.Items.Get(key)
	if entry == nil {
		return key, nil, fmt.Errorf("%w: index %q: %w: %q", ErrCorrupt, w.src.Index, errIndexWithoutItem, key)
	}
	return key, entry, nil
}

// scanChunk is the number of objects Scan, ScanIndex and Vanished decode
// per read transaction.
const scanChunk = 256

// Scan calls fn for every stored object in key order, outside any
// transaction: it reads chunks of 256 objects, each a snapshot. fn's first
// error is returned unchanged; an object that does not decode stops it with
// an error wrapping ErrCorrupt and marks the resource incomplete.
func (s *Store) Scan(ctx context.Context, fn store.ScanFunc) error {
	return s.walk(ctx, "scan", store.Selection{}, fn)
}

// ScanIndex is Scan of the objects whose values for indexName include
// indexedValue (store.ErrIndexNotFound for an unknown index).
func (s *Store) ScanIndex(ctx context.Context, indexName, indexedValue string, fn store.ScanFunc) error {
	if _, err := s.indexFor("scan index", indexName); err != nil {
		return err
	}
	return s.walk(ctx, "scan index", store.Selection{Index: indexName, Value: indexedValue}, fn)
}

type keyObject struct {
	key string
	obj interface{}
}
