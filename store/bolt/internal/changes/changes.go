// Package changes finds what a relist changed, without decoding: it
// merge-walks, in key order, the items of the generation a relist replaced
// (retained in the file until the informer has been told) and of the live
// one, and tells every key that only one holds, or whose envelopes'
// resourceVersions differ. Package bolt decodes the objects of the keys it
// tells (Replace.Changes). A walk runs in one read transaction and stops
// after a bounded number of changes or entries, so that a caller resumes it
// in a later transaction after the last key handled.
package changes

import (
	"bytes"
	"fmt"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Visitor is told what a Walk finds. Its byte slices alias the read
// transaction.
type Visitor interface {
	// Change is key k changed: oenv and lenv are the envelopes of its
	// replaced and live objects (nil: none, vanished or added).
	Change(k, oenv, lenv []byte)
	// Unreadable is the replaced object of k whose envelope cannot be
	// read, with package layout's error. Whether k changed is unknown: a
	// live object of k is told as added (Change with a nil oenv), as
	// client-go tells an object its indexer does not hold, rather than
	// not at all.
	Unreadable(k []byte, err error)
}

// Bad is a live object whose envelope cannot be read, which stops a Walk:
// its key, and an error wrapping store.ErrCorrupt.
type Bad struct {
	Key string
	Err error
}

// Walk tells v the changes between old and live after the key after (from
// the first key if nil), until the end of both, maxChanges changes or
// maxEntries keys walked, both above 1 (the empty key, which a nil after
// cannot name, is handled with a later one: layout.SeekAfter). It returns
// the last key handled (in after's array when it has room), done false if
// it stopped early, and the live object that stopped it, if any (bad, with
// done false).
func Walk(old, live *layout.Generation, after []byte, maxChanges, maxEntries int, v Visitor) (last []byte, done bool, bad *Bad) {
	w := walk{old: old, live: live, v: v}
	oc, lc := old.Items.Cursor(), live.Items.Cursor()
	ok, ov := layout.SeekAfter(oc, after)
	lk, lv := layout.SeekAfter(lc, after)
	for walked := 0; ok != nil || lk != nil; walked++ {
		if w.changes == maxChanges || walked == maxEntries {
			return after, false, nil
		}
		c := compareKeys(ok, lk)
		switch {
		case c < 0: // only in the replaced generation: vanished
			if oenv, err := old.EnvelopeOf(ok, ov); err != nil {
				v.Unreadable(ok, err)
			} else {
				w.change(ok, oenv, nil)
			}
			after = append(after[:0], ok...)
			ok, ov = oc.Next()
		case c > 0: // only in the live generation: added
			lenv, err := live.EnvelopeOf(lk, lv)
			if err != nil {
				return after, false, &Bad{string(lk), err}
			}
			w.change(lk, nil, lenv)
			after = append(after[:0], lk...)
			lk, lv = lc.Next()
		default:
			if bad := w.both(ok, ov, lv); bad != nil {
				return after, false, bad
			}
			after = append(after[:0], lk...)
			ok, ov = oc.Next()
			lk, lv = lc.Next()
		}
	}
	return after, true, nil
}

// walk is a Walk's state.
type walk struct {
	old, live *layout.Generation
	v         Visitor
	changes   int // told to v
}

func (w *walk) change(k, oenv, lenv []byte) {
	w.changes++
	w.v.Change(k, oenv, lenv)
}

// both compares key k, present in both generations with item entries ov
// and lv: changed when the resourceVersions of its envelopes differ.
func (w *walk) both(k, ov, lv []byte) *Bad {
	lenv, err := w.live.EnvelopeOf(k, lv)
	if err != nil {
		return &Bad{string(k), err}
	}
	lrv, err := layout.EnvelopeRV(lenv)
	if err != nil {
		return &Bad{string(k), fmt.Errorf("%w: item %q: %w", store.ErrCorrupt, k, err)}
	}
	oenv, err := w.old.EnvelopeOf(k, ov)
	var orv string
	if err == nil {
		orv, err = layout.EnvelopeRV(oenv)
	}
	switch {
	case err != nil:
		w.v.Unreadable(k, err)
		w.change(k, nil, lenv)
	case orv != lrv:
		w.change(k, oenv, lenv)
	}
	return nil
}

// compareKeys compares two cursor keys, nil (the end) after every key.
func compareKeys(a, b []byte) int {
	switch {
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return bytes.Compare(a, b)
}
