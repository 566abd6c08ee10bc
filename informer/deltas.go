package informer

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/store"
)

// keyState is what the loop knows of one key while it walks the key's
// deltas: the stored state first, then the state each applied delta left.
type keyState struct {
	exists bool
	rv     string
	obj    interface{} // nil when not needed (see storedFor)
}

// pending is a notification waiting for the batch's Apply.
type pending struct {
	n    note
	sync bool
}

// applyDeltas writes a KindDeltas batch to the store in one Apply (one
// bbolt transaction, with the batch's safe resourceVersion: invariant 1),
// then notifies the handlers, in order.
//
// Per key, the deltas are walked oldest first against the stored state:
//
//   - an Added, Updated or Replaced delta whose object's resourceVersion is
//     not newer than the state it would replace is skipped: it is a replay
//     of an event the store already holds (after a crash, the watch resumes
//     from the persisted resourceVersion, which may lag the items);
//   - a Deleted delta for a key the store does not hold is skipped, and so
//     is one not newer than the stored object: its handlers never saw the
//     object, or saw a newer one (client-go's DeltaFIFO drops such deletes
//     too);
//   - a Sync delta (it carries the key only) notifies OnUpdate(stored,
//     stored), the same object twice as in client-go, to the handlers due
//     for a resync and writes nothing.
//
// Only the final state of each key is written. The stored resourceVersion
// of each key of the batch is read without decoding its object; the
// stored object is decoded only for a notification that needs it (the old
// object of an update, a resync) and only when handlers exist, once per
// key, past the store's cache of decoded objects, sharing with the
// update's new object what the two encode alike (store.LikeStatesReader).
// Deletes and skipped replays decode nothing.
func (l *loop) applyDeltas(ctx context.Context, b deltafifo.Batch) error {
	// Handlers are told of the keys they were told of: none while a warm
	// start withholds the store (l.partial empty), those up to l.partial
	// after a replay stopped midway; the replay or relist that follows
	// tells them the rest.
	notify := l.i.proc.count() > 0 && (l.partial == nil || *l.partial != "")
	states, err := l.storedStates(b, notify)
	if err != nil {
		return err
	}
	txns := make([]cache.Transaction, 0, len(b.Keys))
	var notes []pending
	for k, key := range b.Keys {
		notify := notify && (l.partial == nil || key <= *l.partial)
		cur := states[k]
		changed := false
		var last interface{}
		for _, d := range b.Deltas[k] {
			if skipped(d, cur.exists, cur.rv) {
				continue
			}
			switch d.Type {
			case cache.Added, cache.Updated, cache.Replaced:
				if notify {
					if cur.exists {
						notes = append(notes, pending{n: note{kind: noteUpdate, old: cur.obj, new: d.Object}})
					} else {
						notes = append(notes, pending{n: note{kind: noteAdd, new: d.Object, initial: b.IsInInitialList}})
					}
				}
				cur = keyState{exists: true, rv: rvOf(d.Object), obj: d.Object}
				changed, last = true, d.Object
			case cache.Deleted:
				if notify {
					notes = append(notes, pending{n: note{kind: noteDelete, old: d.Object}})
				}
				cur = keyState{}
				changed, last = true, d.Object
			case cache.Sync:
				if !notify {
					continue
				}
				notes = append(notes, pending{n: note{kind: noteUpdate, old: cur.obj, new: cur.obj}, sync: true})
			}
		}
		if !changed {
			continue
		}
		if cur.exists {
			txns = append(txns, cache.Transaction{Type: cache.TransactionTypeUpdate, Object: last})
		} else {
			txns = append(txns, cache.Transaction{Type: cache.TransactionTypeDelete, Object: last})
		}
	}
	rv := b.ResourceVersion
	if rv == "" {
		// Apply would record the last object's resourceVersion, which may
		// be ahead of queued events: keep the store's instead. (Empty only
		// before any list or resourceVersion: the store is not complete.)
		rv = l.st.LastStoreSyncResourceVersion()
	}
	if len(txns) > 0 || rv != "" {
		err := l.write(ctx, "apply", len(txns), func() error { return l.st.Apply(ctx, txns, rv) })
		if err != nil {
			return err
		}
		if len(txns) > 0 {
			l.reportObjects()
		}
	}
	for _, p := range notes {
		l.i.proc.distribute(p.n, p.sync)
	}
	return nil
}

// storedStates returns the stored state of every key of b and, with
// notify, the stored object of each key whose walk reads it (storedFor:
// the old object of an update, the object of a resync).
func (l *loop) storedStates(b deltafifo.Batch, notify bool) ([]keyState, error) {
	read, err := readStates(l.st, b.Keys, func(k int, rv string) (bool, interface{}) {
		if !notify {
			return false, nil
		}
		ok, like := storedFor(rv, b.Deltas[k])
		return ok, l.shareWith(like)
	})
	if err != nil {
		return nil, l.readFailed(fmt.Errorf("read the stored states of %d keys: %w", len(b.Keys), err))
	}
	states := make([]keyState, len(read))
	for k, st := range read {
		states[k] = keyState{exists: st.Exists, rv: st.RV, obj: st.Obj}
	}
	return states, nil
}

// readStates reads the states of keys as store.StatesReader does: in one
// ReadStates call when st is a StatesReader (one read for the batch, the
// objects decoded on every core), else key by key, each resourceVersion
// as the store recorded it (store.ResourceVersionOf: not read from the
// shared object, which a mutating handler may have changed) and each
// wanted object past the store's cache of decoded objects
// (store.GetUncached: the writer neither pays for nor evicts what listers
// read).
func readStates(st store.Store, keys []string, want func(i int, rv string) (bool, interface{})) ([]store.StoredState, error) {
	if sr, ok := st.(store.LikeStatesReader); ok {
		return sr.ReadStatesLike(keys, want)
	}
	if sr, ok := st.(store.StatesReader); ok {
		return sr.ReadStates(keys, func(i int, rv string) bool {
			ok, _ := want(i, rv)
			return ok
		})
	}
	states := make([]store.StoredState, len(keys))
	for i, key := range keys {
		rv, exists, err := st.ResourceVersionOf(key)
		if err != nil {
			return nil, fmt.Errorf("read resourceVersion %q: %w", key, err)
		}
		states[i] = store.StoredState{Exists: exists, RV: rv}
		if !exists {
			continue
		}
		if ok, _ := want(i, rv); !ok {
			continue
		}
		obj, exists, err := store.GetUncached(st, key)
		if err == nil && !exists {
			err = errors.New("stored object vanished")
		}
		if err != nil {
			return nil, fmt.Errorf("get %q: %w", key, err)
		}
		states[i].Obj = obj
	}
	return states, nil
}

// shareWith returns obj as the object a stored object about to be
// replaced by it is decoded sharing with (store.LikeStatesReader), or nil
// with Options.UnsharedOldObjects.
func (l *loop) shareWith(obj interface{}) interface{} {
	if !l.sharesOld() {
		return nil
	}
	return obj
}

// sharesOld reports whether old objects are decoded sharing with their
// new ones (store.LikeStatesReader, store.SharedChanges): unless
// Options.UnsharedOldObjects.
func (l *loop) sharesOld() bool { return !l.i.opts.UnsharedOldObjects }

// storedFor reports whether the walk of deltas from a stored object at
// resourceVersion rv reads the stored object: its first delta that is not
// skipped is an update or a resync. For an update it also returns the new
// object, which the stored one (the update's old object) may be decoded
// sharing what the two have in common (store.LikeStatesReader).
func storedFor(rv string, deltas cache.Deltas) (bool, interface{}) {
	for _, d := range deltas {
		if skipped(d, true, rv) {
			continue
		}
		switch d.Type {
		case cache.Deleted:
			return false, nil
		case cache.Sync:
			return true, nil
		}
		return true, d.Object
	}
	return false, nil
}

// skipped reports whether the walk of applyDeltas skips d against the
// state (exists, rv) of its key: a replay not newer than a stored object,
// a delete of a key not stored or not newer than its stored object (a
// tombstone is never older), a resync of a key not stored.
func skipped(d cache.Delta, exists bool, rv string) bool {
	switch d.Type {
	case cache.Added, cache.Updated, cache.Replaced:
		return exists && !newer(rvOf(d.Object), rv)
	case cache.Deleted:
		if !exists {
			return true
		}
		_, tomb := d.Object.(cache.DeletedFinalStateUnknown)
		return !tomb && !newer(rvOf(d.Object), rv)
	case cache.Sync:
		return !exists
	}
	return true
}

// readFailed handles a failed store read: the store cannot be trusted, so
// the informer relists, and the batch is dropped (the relist redoes it).
func (l *loop) readFailed(err error) error {
	if errors.Is(err, store.ErrClosed) {
		return err
	}
	l.i.ReportCorruption(err)
	return fmt.Errorf("%w: %w", errDropped, err)
}

// rvOf returns obj's resourceVersion, "" if it has none.
func rvOf(obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// newer reports whether an event at resourceVersion rv is newer than a
// stored state at stored. resourceVersions that cannot be compared
// (empty, or not the decimal integers kube-apiserver uses) count as newer,
// so that the event is applied as client-go would.
func newer(rv, stored string) bool {
	c, err := resourceversion.CompareResourceVersion(rv, stored)
	return err != nil || c > 0
}
