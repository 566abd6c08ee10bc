package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// prepared is one write, encoded before any lock is taken.
type prepared struct {
	pos    int // position in the caller's slice
	key    string
	obj    interface{}
	delete bool
	env    []byte     // the item's envelope, for upserts
	sum    uint64     // the hot tier's hash of env, if the store has a tier
	sel    []byte     // the item's select part, for upserts
	values [][]string // per index of the indexSet used, for upserts
}

// prepare computes the key of t and, for an upsert, its envelope.
func (s *Store) prepare(op string, pos int, t cache.Transaction) (prepared, error) {
	switch t.Type {
	case cache.TransactionTypeAdd, cache.TransactionTypeUpdate, cache.TransactionTypeDelete:
	default:
		return prepared{}, s.errorf(fmt.Sprintf("%s: transaction %d", op, pos), fmt.Errorf("%w %q", ErrTransactionType, t.Type))
	}
	key, err := s.key(t.Object)
	if err != nil {
		return prepared{}, s.errorf(fmt.Sprintf("%s: transaction %d", op, pos), err)
	}
	p := prepared{pos: pos, key: key, obj: t.Object, delete: t.Type == cache.TransactionTypeDelete}
	if p.delete {
		return p, nil
	}
	if p.env, err = s.encode(key, t.Object); err != nil {
		return prepared{}, s.errorf(fmt.Sprintf("%s: transaction %d: key %q", op, pos, key), err)
	}
	p.sel = layout.AppendSelectPart(nil, key, t.Object)
	if s.hot != nil {
		p.sum = s.hot.Sum(p.env)
	}
	return p, nil
}

// encode returns the envelope of obj, stored under key.
func (s *Store) encode(key string, obj interface{}) ([]byte, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%w: %T is not a runtime.Object", ErrEncode, obj)
	}
	var rv, uid string
	if m, err := meta.Accessor(obj); err == nil {
		rv, uid = m.GetResourceVersion(), string(m.GetUID())
	}
	buf, off := layout.AppendEnvelopeHeader(newEnvBuf(), rv, uid)
	buf, err := codec.EncodeFor(s.codec, buf, ro, func() []byte { return layout.ItemAD(s.name, key, rv, uid) })
	if err != nil {
		return nil, fmt.Errorf("%w with codec %s: %w", ErrEncode, s.codec.Name(), err)
	}
	if buf, err = layout.FinishEnvelope(buf, off, []byte(key)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return buf, nil
}

// envPool recycles envelope buffers (*[]byte). An envelope lives from
// prepare to the end of the write transaction that stores it (bbolt copies
// values into its pages at commit and keeps no reference after the
// transaction), so a stream of batches reuses a few buffers instead of
// allocating one per object, grown to the object's size.
var envPool sync.Pool

const (
	// envBufStart is the capacity of a new envelope buffer.
	envBufStart = 1024
	// envBufMaxPooled is the largest buffer kept for reuse: a rare large
	// object (a big Secret or ConfigMap) is not kept alive by the pool.
	envBufMaxPooled = 64 << 10
)

// newEnvBuf returns an empty envelope buffer, a recycled one if any.
func newEnvBuf() []byte {
	if p, ok := envPool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, envBufStart)
}

// releaseEnvs gives the envelopes of ops back to envPool and clears them,
// if the store's codec retains nothing it encoded (codec.RetainsNothing).
// Call it only once the write transaction that stored them has ended
// (committed or not), and only on ops whose entries each hold their own
// envelope (as prepare and prepareAdds make them).
func (s *Store) releaseEnvs(ops []prepared) {
	if !codec.RetainsNothing(s.codec) {
		return
	}
	for i := range ops {
		b := ops[i].env
		ops[i].env = nil
		if cap(b) > 0 && cap(b) <= envBufMaxPooled {
			envPool.Put(&b)
		}
	}
}

// sortByKey orders ops by key, keeping the order of ops on the same key:
// bbolt inserts keys in order much faster than scattered ones (3x for a
// relist of 10k pods), and the outcome of a batch depends only on the order
// of the writes to each key.
func sortByKey(ops []prepared) {
	slices.SortStableFunc(ops, func(a, b prepared) int { return strings.Compare(a.key, b.key) })
}

// computeValues fills p.values for an upsert with the functions of ix.
func (p *prepared) computeValues(ix *indexSet) error {
	if p.delete || len(ix.list) == 0 {
		return nil
	}
	p.values = make([][]string, len(ix.list))
	for i, x := range ix.list {
		vs, err := indexValuesOf(x, p.key, p.obj)
		if err != nil {
			return err
		}
		p.values[i] = vs
	}
	return nil
}

// indexValuesOf returns the sorted, deduplicated values of x for obj.
func indexValuesOf(x indexer, key string, obj interface{}) ([]string, error) {
	if x.fn == nil {
		return nil, fmt.Errorf("index %q: %w", x.name, ErrNoIndexFunc)
	}
	return layout.IndexValues(x.name, x.fn, key, obj)
}

// writeLiveLocked runs fn on the live generation in one write transaction
// together with the resource's meta, which fn may change and which is
// written in the same transaction (invariant 1). The in-memory meta is
// updated only after the commit succeeded. s.mu must be held.
func (s *Store) writeLiveLocked(op string, fn func(g *layout.Generation, m *layout.Meta) error) error {
	return s.writeLiveWithLocked(op, s.db.update, fn)
}

// writeLiveWithLocked is writeLiveLocked through update (db.update, or
// db.updateKeepHot for the writes that keep the hot tier up to date).
func (s *Store) writeLiveWithLocked(op string, update func(string, func(*bbolt.Tx) error) error, fn func(g *layout.Generation, m *layout.Meta) error) error {
	m := s.meta.Clone()
	err := update(op, func(tx *bbolt.Tx) error {
		res := tx.Bucket(s.bname)
		if res == nil {
			return fmt.Errorf("%w: resource bucket missing", ErrCorrupt)
		}
		g, err := layout.OpenLive(res)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if err := fn(g, &m); err != nil {
			return err
		}
		return layout.PutMeta(res, &m)
	})
	if err != nil {
		return s.errorf(op, err)
	}
	s.setMetaLocked(m)
	return nil
}

// writer applies prepared writes to one generation.
type writer struct {
	g     *layout.Generation
	names []string // index names, aligned with prepared.values
	idx   []*bbolt.Bucket
	sums  []layout.IndexSum // aligned with idx
	// refile ignores the index values recorded in item entries: an index
	// rebuild files every item again into emptied index buckets.
	refile bool
	// sequenceChecked: the envelope sequence was found ahead of every id
	// in use, so the ids given out in this transaction are free.
	sequenceChecked bool
}

func (w *writer) indexBucket(i int) (*bbolt.Bucket, error) {
	if w.idx == nil {
		w.idx = make([]*bbolt.Bucket, len(w.names))
		w.sums = make([]layout.IndexSum, len(w.names))
	}
	if w.idx[i] == nil {
		b := w.g.Index.Bucket(layout.IndexBucketName(w.names[i]))
		if b == nil {
			return nil, fmt.Errorf("%w: index bucket %q missing", ErrCorrupt, w.names[i])
		}
		w.idx[i], w.sums[i] = b, layout.NewIndexSum(w.names[i])
	}
	return w.idx[i], nil
}

// applyAll performs ops in order and returns the change in the number of
// objects.
func (w *writer) applyAll(ops []prepared) (int64, error) {
	var delta int64
	for i := range ops {
		d, err := w.apply(&ops[i])
		if err != nil {
			return 0, err
		}
		delta += d
	}
	return delta, nil
}

// apply performs p and returns the change in the number of objects.
func (w *writer) apply(p *prepared) (int64, error) {
	if p.delete {
		removed, err := w.remove(p.key)
		if removed {
			return -1, err
		}
		return 0, err
	}
	added, err := w.put(p.key, p.env, p.sel, p.values)
	if added {
		return 1, err
	}
	return 0, err
}

// put stores env under key with select part sel and files key under
// values, removing the index entries the previous object had and the new
// one has not (read from the item entry, without decoding the previous
// object). A nil env leaves the envelope as it is and only re-files the
// item. An update whose select part and index values are unchanged
// rewrites the envelope only.
func (w *writer) put(key string, env, sel []byte, values [][]string) (added bool, err error) {
	k := []byte(key)
	cur := w.g.Items.Get(k)
	added = cur == nil
	var id []byte
	var old map[string][]string
	changed := added || w.refile
	if !added {
		if w.refile {
			// A re-file ignores the recorded select part and values
			// (the index buckets were emptied) and writes both
			// afresh, so a damaged entry is rewritten rather than
			// stopping an index rebuild.
			id, err = layout.ItemBlobID(k, cur)
		} else {
			var e layout.ItemEntry
			if e, err = layout.ParseItemEntry(k, cur); err == nil {
				id, changed = e.ID, !bytes.Equal(e.Select, sel)
				old, err = layout.DecodeReverse(e.Reverse)
			}
		}
		if err != nil {
			return false, fmt.Errorf("%w: key %q: %w", ErrCorrupt, key, err)
		}
		id = append([]byte(nil), id...)
	} else if env == nil {
		return false, fmt.Errorf("re-file %q: %w", key, errNoItem)
	}
	for i, name := range w.names {
		var nv []string
		if values != nil {
			nv = values[i]
		}
		ov := old[name]
		if slices.Equal(ov, nv) {
			continue
		}
		changed = true
		b, err := w.indexBucket(i)
		if err != nil {
			return false, err
		}
		for _, v := range ov {
			if !slices.Contains(nv, v) {
				if err := b.Delete(layout.IndexKey(v, key)); err != nil {
					return false, err
				}
			}
		}
		for _, v := range nv {
			if !slices.Contains(ov, v) {
				ik := layout.IndexKey(v, key)
				if err := b.Put(ik, w.sums[i].Value(ik, v)); err != nil {
					return false, err
				}
			}
		}
	}
	if added {
		if !w.sequenceChecked {
			// Once per transaction, not per add: a sequence that went
			// back (a damaged file) would give another item's envelope
			// to this key.
			if err := w.g.CheckSequence(); err != nil {
				return false, fmt.Errorf("%w: key %q: %w", ErrCorrupt, key, err)
			}
			w.sequenceChecked = true
		}
		if id, err = w.g.NextBlobID(); err != nil {
			return false, err
		}
	}
	if env != nil {
		if err := w.g.Blobs.Put(id, env); err != nil {
			return false, err
		}
	}
	if !changed {
		return added, nil
	}
	// A new slice: the entry must not share memory with id, the
	// envelope's key.
	return added, w.g.Items.Put(k, layout.AppendItemEntry(make([]byte, 0, len(id)+len(sel)+64), k, id, sel, w.names, values))
}

// remove deletes key, its envelope and its index entries.
func (w *writer) remove(key string) (bool, error) {
	k := []byte(key)
	cur := w.g.Items.Get(k)
	if cur == nil {
		return false, nil
	}
	old, err := layout.ItemReverse(k, cur)
	if err != nil {
		return false, fmt.Errorf("%w: key %q: %w", ErrCorrupt, key, err)
	}
	for i, name := range w.names {
		if len(old[name]) == 0 {
			continue
		}
		b, err := w.indexBucket(i)
		if err != nil {
			return false, err
		}
		for _, v := range old[name] {
			if err := b.Delete(layout.IndexKey(v, key)); err != nil {
				return false, err
			}
		}
	}
	return true, w.g.DeleteItem(k)
}

// errNoItem is returned by writer.put when asked to re-file a key that has
// no item.
var errNoItem = errors.New("no such item")
