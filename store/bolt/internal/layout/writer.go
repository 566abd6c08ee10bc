package layout

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store"
)

// Write is one write of a batch to a generation.
type Write struct {
	Key    string
	Delete bool
	// Env is the item's envelope (nil: re-file the item, leaving its
	// envelope), Sel its select part (AppendSelectPart), Values its index
	// values, one per index name of the Writer, for upserts.
	Env, Sel []byte
	Values   [][]string
}

// Writer applies writes to one generation, keeping its item entries,
// envelopes and index entries in agreement (invariant 4): an item's entry
// records the index values it was filed under, so that an update or a
// delete removes exactly those, without decoding the old object.
type Writer struct {
	G     *Generation
	Names []string // index names, aligned with Write.Values
	// Refile ignores the index values recorded in item entries: an index
	// rebuild files every item again into emptied index buckets.
	Refile bool

	idx  []*bbolt.Bucket
	sums []IndexSum // aligned with idx
	// sequenceChecked: the envelope sequence was found ahead of every id
	// in use, so the ids given out in this transaction are free.
	sequenceChecked bool
}

func (w *Writer) indexBucket(i int) (*bbolt.Bucket, error) {
	if w.idx == nil {
		w.idx = make([]*bbolt.Bucket, len(w.Names))
		w.sums = make([]IndexSum, len(w.Names))
	}
	if w.idx[i] == nil {
		b := w.G.Index.Bucket(IndexBucketName(w.Names[i]))
		if b == nil {
			return nil, fmt.Errorf("%w: index bucket %q missing", store.ErrCorrupt, w.Names[i])
		}
		w.idx[i], w.sums[i] = b, NewIndexSum(w.Names[i])
	}
	return w.idx[i], nil
}

// Apply performs p and returns the change in the number of objects.
func (w *Writer) Apply(p *Write) (int64, error) {
	if p.Delete {
		removed, err := w.Remove(p.Key)
		if removed {
			return -1, err
		}
		return 0, err
	}
	added, err := w.Put(p.Key, p.Env, p.Sel, p.Values)
	if added {
		return 1, err
	}
	return 0, err
}

// Put stores env under key with select part sel and files key under
// values, removing the index entries the previous object had and the new
// one has not (read from the item entry, without decoding the previous
// object). A nil env leaves the envelope as it is and only re-files the
// item. An update whose select part and index values are unchanged
// rewrites the envelope only.
func (w *Writer) Put(key string, env, sel []byte, values [][]string) (added bool, err error) {
	k := []byte(key)
	cur := w.G.Items.Get(k)
	added = cur == nil
	var id []byte
	var old map[string][]string
	// sameValues: the item is filed under values already (its reverse
	// entry is the one values make), as after most updates.
	sameValues := false
	changed := added || w.Refile
	if !added {
		if w.Refile {
			// A re-file ignores the recorded select part and values
			// (the index buckets were emptied) and writes both
			// afresh, so a damaged entry is rewritten rather than
			// stopping an index rebuild.
			id, err = ItemBlobID(k, cur)
		} else {
			var e ItemEntry
			if e, err = ParseItemEntry(k, cur); err == nil {
				id, changed = e.ID, !bytes.Equal(e.Select, sel)
				if sameValues = sameReverse(e.Reverse, w.Names, values); !sameValues {
					old, err = DecodeReverse(e.Reverse)
				}
			}
		}
		if err != nil {
			return false, fmt.Errorf("%w: key %q: %w", store.ErrCorrupt, key, err)
		}
		id = append([]byte(nil), id...)
	} else if env == nil {
		return false, fmt.Errorf("re-file %q: %w", key, errNoItem)
	}
	if !sameValues {
		refiled, err := w.fileUnder(key, old, values)
		if err != nil {
			return false, err
		}
		changed = changed || refiled
	}
	if added {
		if !w.sequenceChecked {
			// Once per transaction, not per add: a sequence that went
			// back (a damaged file) would give another item's envelope
			// to this key.
			if err := w.G.CheckSequence(); err != nil {
				return false, fmt.Errorf("%w: key %q: %w", store.ErrCorrupt, key, err)
			}
			w.sequenceChecked = true
		}
		if id, err = w.G.NextBlobID(); err != nil {
			return false, err
		}
	}
	if env != nil {
		if err := w.G.Blobs.Put(id, env); err != nil {
			return false, err
		}
	}
	if !changed {
		return added, nil
	}
	// A new slice: the entry must not share memory with id, the
	// envelope's key.
	return added, w.G.Items.Put(k, AppendItemEntry(make([]byte, 0, len(id)+len(sel)+64), k, id, sel, w.Names, values))
}

// fileUnder moves key's index entries from the values old (by index
// name) to values (by position in w.Names), touching only the indexes
// whose values differ, and reports whether any did.
func (w *Writer) fileUnder(key string, old map[string][]string, values [][]string) (changed bool, err error) {
	for i, name := range w.Names {
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
				if err := b.Delete(IndexKey(v, key)); err != nil {
					return false, err
				}
			}
		}
		for _, v := range nv {
			if !slices.Contains(ov, v) {
				ik := IndexKey(v, key)
				if err := b.Put(ik, w.sums[i].Value(ik, v)); err != nil {
					return false, err
				}
			}
		}
	}
	return changed, nil
}

// sameReverse reports whether rev is the reverse entry of values: the
// entry is canonical (names in order, values sorted and deduplicated), so
// equal bytes are equal values, found without decoding rev into a map.
func sameReverse(rev []byte, names []string, values [][]string) bool {
	var buf [256]byte
	return bytes.Equal(AppendReverse(buf[:0], names, values), rev)
}

// Remove deletes key, its envelope and its index entries.
func (w *Writer) Remove(key string) (bool, error) {
	k := []byte(key)
	cur := w.G.Items.Get(k)
	if cur == nil {
		return false, nil
	}
	old, err := ItemReverse(k, cur)
	if err != nil {
		return false, fmt.Errorf("%w: key %q: %w", store.ErrCorrupt, key, err)
	}
	for i, name := range w.Names {
		if len(old[name]) == 0 {
			continue
		}
		b, err := w.indexBucket(i)
		if err != nil {
			return false, err
		}
		for _, v := range old[name] {
			if err := b.Delete(IndexKey(v, key)); err != nil {
				return false, err
			}
		}
	}
	return true, w.G.DeleteItem(k)
}

// errNoItem is returned by Writer.Put when asked to re-file a key that has
// no item.
var errNoItem = errors.New("no such item")
