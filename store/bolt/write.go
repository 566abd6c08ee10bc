package bolt

import (
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

// prepared is one write, encoded before any lock is taken; its Values
// are per index of the indexSet used.
type prepared struct {
	layout.Write
	pos int // position in the caller's slice
	obj interface{}
	sum uint64 // the hot tier's hash of Env, if the store has a tier
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
	p := prepared{pos: pos, obj: t.Object, Write: layout.Write{Key: key, Delete: t.Type == cache.TransactionTypeDelete}}
	if p.Delete {
		return p, nil
	}
	if p.Env, err = s.encode(key, t.Object); err != nil {
		return prepared{}, s.errorf(fmt.Sprintf("%s: transaction %d: key %q", op, pos, key), err)
	}
	p.Sel = layout.AppendSelectPart(nil, key, t.Object)
	if s.hot != nil {
		p.sum = s.hot.Sum(p.Env)
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
		b := ops[i].Env
		ops[i].Env = nil
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
	slices.SortStableFunc(ops, func(a, b prepared) int { return strings.Compare(a.Key, b.Key) })
}

// computeValues fills p.Values for an upsert with the functions of ix.
func (p *prepared) computeValues(ix *indexSet) error {
	if p.Delete || len(ix.list) == 0 {
		return nil
	}
	p.Values = make([][]string, len(ix.list))
	for i, x := range ix.list {
		vs, err := indexValuesOf(x, p.Key, p.obj)
		if err != nil {
			return err
		}
		p.Values[i] = vs
	}
	return nil
}

// envBytes returns the bytes of the envelopes of ops: what their write
// touched of the file, for DB.touched.
func envBytes(ops []prepared) int {
	n := 0
	for i := range ops {
		n += len(ops[i].Env)
	}
	return n
}

// applyAll performs ops in order on w's generation and returns the change
// in the number of objects.
func applyAll(w *layout.Writer, ops []prepared) (int64, error) {
	var delta int64
	for i := range ops {
		d, err := w.Apply(&ops[i].Write)
		if err != nil {
			return 0, err
		}
		delta += d
	}
	return delta, nil
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
		res, g, err := s.openLive(tx)
		if err != nil {
			return err
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
