package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/store"
)

// relist is an open relist: the store's Replace (or Fill) and what the
// log line and the notifications need. Nothing per object is remembered:
// once the relist commits, the store streams the differences between the
// content it replaced (retained until then, in the file for a persistent
// store) and the new one (store.Replace.Changes), so that a relist holds a
// bounded number of objects in memory however many changed.
//
// A relist into an empty store (a cold start) of a store.Filler is a
// fill instead: each page is written to the store's content and its
// objects are then notified as adds, as client-go's informer fills its
// indexer during the initial list; nothing is read back after the commit.
type relist struct {
	r store.Replace // nil for a fill
	// fill is the open fill of a relist into an empty store.Filler.
	fill    store.Fill
	initial bool
	// fresh: the store was empty at the start, so every listed object is
	// an add: the committed content is streamed as such (a fill notifies
	// each page instead).
	fresh  bool
	listed int
	start  time.Time
	// added, updated and notifying are a fill's adds and updates
	// notified so far and the time spent notifying them, for the log and
	// Metrics.Replayed.
	added, updated int
	notifying      time.Duration
	// filled holds the keys a fill wrote, to tell a key the list repeats
	// (see fillRepeats).
	filled *keyFilter
}

// relistCounts counts a relist's notifications, for the log.
type relistCounts struct {
	added, updated, deleted int
}

// beginRelist opens a store replace, abandoning one left open. A relist
// into an empty store that is a store.Filler opens a fill instead, unless
// a warm start left the handlers partly told (l.partial): the relist that
// follows such a start is diffed as before.
func (l *loop) beginRelist(ctx context.Context, b deltafifo.Batch) error {
	l.abortRelist()
	l.i.relistBegun()
	st, err := l.st.State()
	fresh := err == nil && st.Objects == 0
	initial := b.IsInInitialList || l.partial != nil
	if f, ok := l.st.(store.Filler); ok && fresh && l.partial == nil {
		var fl store.Fill
		err := l.write(ctx, "begin fill", 0, func() (err error) {
			fl, err = f.BeginFill(ctx)
			if errors.Is(err, store.ErrNotEmpty) {
				return nil // written to by someone else meanwhile: replace it
			}
			return err
		})
		if err != nil {
			return err
		}
		if fl != nil {
			l.openRelist(&relist{fill: fl, initial: initial, fresh: true, start: l.i.opts.Clock.Now()})
			return nil
		}
		fresh = false
	}
	var r store.Replace
	err = l.write(ctx, "begin replace", 0, func() (err error) {
		r, err = l.st.BeginReplace(ctx)
		return err
	})
	if err != nil {
		return err
	}
	l.openRelist(&relist{r: r, initial: initial, fresh: fresh, start: l.i.opts.Clock.Now()})
	return nil
}

// relistPage stages listed objects. What changed is found after the
// commit (see endRelist), so nothing is read from the store here.
func (l *loop) relistPage(ctx context.Context, b deltafifo.Batch) error {
	rep := l.rep
	if rep == nil {
		l.logger.V(4).Info("Dropping a page of a relist that could not begin", "objects", len(b.Objects))
		return nil
	}
	rep.listed += len(b.Objects)
	if rep.fill != nil {
		return l.fillPage(ctx, rep, b)
	}
	err := l.write(ctx, "replace add", len(b.Objects), func() error { return rep.r.Add(ctx, b.Objects...) })
	if err != nil {
		l.abortRelist()
	}
	return err
}

// fillPage writes a page of a fill to the store's content and then (so
// that a lister called from a handler finds the object) notifies the
// handlers of its objects as adds, in page order, paced as notifyRelist
// paces. A handler added meanwhile is replayed the content filled so far
// (serveLate, between batches) and gets the later pages from here: no
// object twice, none missed. A key the list holds twice is told as an
// update the second time, as client-go's informer tells it.
func (l *loop) fillPage(ctx context.Context, rep *relist, b deltafifo.Batch) error {
	repeated, err := l.fillRepeats(rep, b.Objects)
	if err != nil {
		l.abortRelist()
		return err
	}
	err = l.write(ctx, "fill add", len(b.Objects), func() error { return rep.fill.Add(ctx, b.Objects...) })
	if err != nil {
		l.abortRelist()
		return err
	}
	l.reportObjects()
	ls := l.i.proc.active()
	if len(ls) == 0 {
		return nil
	}
	start := l.i.opts.Clock.Now()
	defer func() { rep.notifying += l.since(start) }()
	bound := int64(l.i.opts.ReplayPending)
	for i, obj := range b.Objects {
		if err := l.pace(ctx, ls, bound); err != nil {
			return err
		}
		nt := note{kind: noteAdd, new: obj, initial: rep.initial}
		if old, ok := repeated[i]; ok {
			nt = note{kind: noteUpdate, old: old, new: obj}
			rep.updated++
		} else {
			rep.added++
		}
		l.i.proc.distribute(nt, false)
	}
	return nil
}

// fillRepeats returns, by index in objs, the object the handlers were
// last told of for each object of a fill's page whose key the fill
// already wrote (an earlier page) or the page already holds (an earlier
// object): a list that repeats a key, which kube-apiserver's lists and
// WatchLists never do. The fill's key filter answers for every key
// without a store read; only the keys it may hold are read, before the
// page overwrites them. A key the store cannot key is left to the
// store's Add, which refuses the page.
func (l *loop) fillRepeats(rep *relist, objs []interface{}) (map[int]interface{}, error) {
	if rep.filled == nil {
		rep.filled = newKeyFilter()
	}
	keyOf := l.st.KeyFunc()
	keys := make([]string, len(objs))
	var maybe []bool // by index: the filter may have held the key
	for i, obj := range objs {
		key, err := keyOf(obj)
		if err != nil {
			continue
		}
		keys[i] = key
		if rep.filled.add(key) {
			if maybe == nil {
				maybe = make([]bool, len(objs))
			}
			maybe[i] = true
		}
	}
	if maybe == nil {
		return nil, nil
	}
	repeated := map[int]interface{}{}
	last := make(map[string]int, len(objs))
	var stored []string
	var storedAt []int
	for i, key := range keys {
		if key == "" {
			continue
		}
		if j, ok := last[key]; ok {
			repeated[i] = objs[j]
		} else if maybe[i] {
			// Filled by an earlier page, or a false positive of the
			// filter (the store then lacks it: an add).
			stored, storedAt = append(stored, key), append(storedAt, i)
		}
		last[key] = i
	}
	if len(stored) == 0 {
		return repeated, nil
	}
	states, err := readStates(l.st, stored, func(n int, _ string) (bool, interface{}) { return true, l.shareWith(objs[storedAt[n]]) })
	if err != nil {
		return nil, l.readFailed(fmt.Errorf("read the stored states of %d keys a fill may repeat: %w", len(stored), err))
	}
	for n, st := range states {
		if st.Exists && st.Obj != nil {
			repeated[storedAt[n]] = st.Obj
		}
	}
	return repeated, nil
}

// endRelist commits the relist at the list's resourceVersion and then
// (so that listers already see the new content) notifies the handlers of
// what changed, paced, streamed from the store: a key the store lacked is
// an add, a key stored with another resourceVersion an update (with the
// replaced object as the old one), an equal resourceVersion nothing at
// all, and a key the list lacked a deletion with its last stored state.
// The replaced content is released afterwards, whatever happened.
func (l *loop) endRelist(ctx context.Context, b deltafifo.Batch) error {
	rep := l.rep
	if rep == nil {
		l.logger.V(4).Info("Ignoring the end of a relist that could not begin", "resourceVersion", b.ResourceVersion)
		return nil
	}
	if rep.fill != nil {
		return l.endFill(ctx, rep, b)
	}
	err := l.write(ctx, "replace commit", 0, func() error { return rep.r.Commit(ctx, b.ResourceVersion) })
	if err != nil {
		l.abortRelist()
		return err
	}
	defer func() {
		if err := rep.r.Release(); err != nil {
			l.logger.Error(err, "Releasing the content a relist replaced failed")
		}
		l.i.endBurst(rep.listed)
	}()
	partial := l.partial
	l.relistEnded()
	c, err := l.notifyRelist(ctx, rep, partial)
	l.logger.V(2).Info("Relist committed", "resourceVersion", b.ResourceVersion, "listed", rep.listed,
		"added", c.added, "updated", c.updated, "deleted", c.deleted, "fresh", rep.fresh, "took", l.since(rep.start))
	return err
}

// openRelist makes rep the open relist, a burst for the releaser until
// abortRelist ends it, or its commit (endRelist once its changes were told
// and what it replaced released, endFill).
func (l *loop) openRelist(rep *relist) {
	l.rep = rep
	l.i.releaser.Begin()
}

// relistEnded records that a relist or fill committed: the file holds the
// server's content now, whatever it held before.
func (l *loop) relistEnded() {
	l.rep = nil
	l.partial = nil
	l.withheld = false
	l.checked = true
	l.i.relistDone()
	l.reportObjects()
}

// endFill commits a fill at the list's resourceVersion. Its objects were
// notified page by page: nothing is read back.
func (l *loop) endFill(ctx context.Context, rep *relist, b deltafifo.Batch) error {
	err := l.write(ctx, "fill commit", 0, func() error { return rep.fill.Commit(ctx, b.ResourceVersion) })
	if err != nil {
		l.abortRelist()
		return err
	}
	l.relistEnded()
	if rep.added+rep.updated > 0 || len(l.i.proc.active()) > 0 {
		// As notifyRelist reports a relist told to handlers: the adds
		// and the time spent telling them, page by page.
		l.i.opts.Metrics.Replayed("relist", rep.notifying, rep.added+rep.updated)
	}
	l.logger.V(2).Info("Relist committed", "resourceVersion", b.ResourceVersion, "listed", rep.listed,
		"added", rep.added, "updated", rep.updated, "deleted", 0, "fresh", true, "filled", true, "took", l.since(rep.start))
	l.i.endBurst(rep.listed)
	return nil
}

// notifyRelist tells the handlers what a committed relist changed. With
// partial set, the handlers were told of the keys up to *partial only
// (a warm start that stopped midway): changes are notified for those,
// and every stored object after it is an add.
func (l *loop) notifyRelist(ctx context.Context, rep *relist, partial *string) (relistCounts, error) {
	var c relistCounts
	ls := l.i.proc.active()
	if len(ls) == 0 {
		return c, nil
	}
	start := l.i.opts.Clock.Now()
	bound := int64(l.i.opts.ReplayPending)
	send := func(nt note) error {
		if err := l.pace(ctx, ls, bound); err != nil {
			return err
		}
		l.i.proc.distribute(nt, false)
		return nil
	}
	addsAfter := func(after *string) error {
		return l.scan(ctx, func(key string, obj interface{}) error {
			if after != nil && key <= *after {
				return nil
			}
			c.added++
			return send(note{kind: noteAdd, new: obj, initial: rep.initial})
		})
	}
	var err error
	switch {
	case rep.fresh:
		err = addsAfter(nil)
	case partial != nil && *partial == "":
		err = addsAfter(partial)
	default:
		err = l.changes(ctx, rep.r, func(ch store.Change) error {
			if partial != nil && ch.Key > *partial {
				return nil // the handlers never saw it: addsAfter tells them
			}
			switch {
			case ch.Old == nil:
				c.added++
				return send(note{kind: noteAdd, new: ch.New, initial: rep.initial})
			case ch.New == nil:
				c.deleted++
				return send(note{kind: noteDelete, old: cache.DeletedFinalStateUnknown{Key: ch.Key, Obj: ch.Old}})
			}
			c.updated++
			return send(note{kind: noteUpdate, old: ch.Old, new: ch.New})
		})
		if err == nil && partial != nil {
			err = addsAfter(partial)
		}
	}
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			err = l.readFailed(fmt.Errorf("relist changes: %w", err))
		}
		return c, err
	}
	l.i.opts.Metrics.Replayed("relist", l.since(start), c.added+c.updated+c.deleted)
	return c, nil
}

// abortRelist discards the open relist, if any. An aborted fill leaves
// what it wrote as the store's content (the handlers were told of it),
// marked incomplete: the next relist diffs against it.
func (l *loop) abortRelist() {
	if l.rep == nil {
		return
	}
	var err error
	if l.rep.fill != nil {
		err = l.rep.fill.Abort()
	} else {
		err = l.rep.r.Abort()
	}
	if err != nil {
		l.logger.Error(err, "Aborting a relist failed")
	}
	// A relist aborted midway (a list that failed, a stop) allocated
	// what it listed, as a committed one did.
	l.i.endBurst(l.rep.listed)
	l.rep = nil
}

// changes calls r's Changes, or its ChangesShared when the store can share
// an update's old object with the new one (sharesOld).
func (l *loop) changes(ctx context.Context, r store.Replace, fn store.ChangeFunc) error {
	if sc, ok := r.(store.SharedChanges); ok && l.sharesOld() {
		return sc.ChangesShared(ctx, fn)
	}
	return r.Changes(ctx, fn)
}
