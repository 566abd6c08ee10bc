package informer

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/store"
)

// relist is an open relist: the store's Replace, and what the handlers
// must be told once it commits. Only keys are remembered, plus the old
// objects of updates; a relist into an empty store (a cold start) remembers
// nothing and streams the committed content instead.
type relist struct {
	r       store.Replace
	initial bool
	// fresh: the store was empty at the start, so every listed object is
	// an add.
	fresh   bool
	added   []string
	updated []updatedKey
	listed  int
	start   time.Time
}

type updatedKey struct {
	key string
	old interface{}
}

// beginRelist opens a store replace, abandoning one left open.
func (l *loop) beginRelist(ctx context.Context, b deltafifo.Batch) error {
	l.abortRelist()
	l.i.relistBegun()
	st, err := l.st.State()
	fresh := err == nil && st.Objects == 0
	var r store.Replace
	err = l.write(ctx, "begin replace", 0, func() (err error) {
		r, err = l.st.BeginReplace(ctx)
		return err
	})
	if err != nil {
		return err
	}
	l.rep = &relist{r: r, initial: b.IsInInitialList || l.partial != nil, fresh: fresh, start: l.i.opts.Clock.Now()}
	return nil
}

// relistPage stages listed objects and notes which of them changed: a key
// the store lacks is an add, a key stored with another resourceVersion an
// update (its old object kept for OnUpdate), an equal resourceVersion
// nothing at all.
func (l *loop) relistPage(ctx context.Context, b deltafifo.Batch) error {
	rep := l.rep
	if rep == nil {
		l.logger.V(4).Info("Dropping a page of a relist that could not begin", "objects", len(b.Objects))
		return nil
	}
	if !rep.fresh {
		for _, obj := range b.Objects {
			key, err := store.KeyOf(l.st.KeyFunc(), obj)
			if err != nil {
				continue // the store's Add reports it
			}
			if l.partial != nil && key > *l.partial {
				// The handlers never got this key from the warm start.
				rep.added = append(rep.added, key)
				continue
			}
			rv, exists, err := l.st.ResourceVersionOf(key)
			if err != nil {
				l.abortRelist()
				return l.readFailed("read resourceVersion", key, err)
			}
			switch {
			case !exists:
				rep.added = append(rep.added, key)
			case rv != rvOf(obj):
				old, _, err := l.st.GetByKey(key)
				if err != nil {
					l.abortRelist()
					return l.readFailed("get", key, err)
				}
				rep.updated = append(rep.updated, updatedKey{key: key, old: old})
			}
		}
	}
	rep.listed += len(b.Objects)
	err := l.write(ctx, "replace add", len(b.Objects), func() error { return rep.r.Add(ctx, b.Objects...) })
	if err != nil {
		l.abortRelist()
	}
	return err
}

// endRelist finds the vanished objects, commits the relist at the list's
// resourceVersion and then (so that listers already see the new content)
// notifies the handlers of what changed, paced.
func (l *loop) endRelist(ctx context.Context, b deltafifo.Batch) error {
	rep := l.rep
	if rep == nil {
		l.logger.V(4).Info("Ignoring the end of a relist that could not begin", "resourceVersion", b.ResourceVersion)
		return nil
	}
	var deleted []cache.DeletedFinalStateUnknown
	err := l.write(ctx, "replace vanished", 0, func() error {
		deleted = deleted[:0]
		return rep.r.Vanished(ctx, func(key string, obj interface{}) error {
			if l.partial != nil && key > *l.partial {
				return nil // the handlers never saw it
			}
			deleted = append(deleted, cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
			return nil
		})
	})
	if err == nil {
		err = l.write(ctx, "replace commit", 0, func() error { return rep.r.Commit(ctx, b.ResourceVersion) })
	}
	if err != nil {
		l.abortRelist()
		return err
	}
	l.rep = nil
	l.partial = nil
	l.i.relistDone()
	l.reportObjects()
	l.logger.V(2).Info("Relist committed", "resourceVersion", b.ResourceVersion, "listed", rep.listed,
		"added", len(rep.added), "updated", len(rep.updated), "deleted", len(deleted), "fresh", rep.fresh, "took", l.since(rep.start))
	return l.notifyRelist(ctx, rep, deleted)
}

func (l *loop) notifyRelist(ctx context.Context, rep *relist, deleted []cache.DeletedFinalStateUnknown) error {
	ls := l.i.proc.active()
	if len(ls) == 0 {
		return nil
	}
	start := l.i.opts.Clock.Now()
	bound := int64(l.i.opts.ReplayPending)
	n := 0
	send := func(nt note) error {
		if err := pace(ctx, ls, bound); err != nil {
			return err
		}
		l.i.proc.distribute(nt, false)
		n++
		return nil
	}
	if rep.fresh {
		if err := l.scan(ctx, func(_ string, obj interface{}) error {
			return send(note{kind: noteAdd, new: obj, initial: rep.initial})
		}); err != nil {
			return err
		}
	}
	for _, key := range rep.added {
		obj, exists, err := l.st.GetByKey(key)
		if err != nil {
			return l.readFailed("get", key, err)
		}
		if exists {
			if err := send(note{kind: noteAdd, new: obj, initial: rep.initial}); err != nil {
				return err
			}
		}
	}
	for _, u := range rep.updated {
		obj, exists, err := l.st.GetByKey(u.key)
		if err != nil {
			return l.readFailed("get", u.key, err)
		}
		if exists {
			if err := send(note{kind: noteUpdate, old: u.old, new: obj}); err != nil {
				return err
			}
		}
	}
	for _, d := range deleted {
		if err := send(note{kind: noteDelete, old: d}); err != nil {
			return err
		}
	}
	l.i.opts.Metrics.Replayed("relist", l.since(start), n)
	return nil
}

// abortRelist discards the open relist, if any.
func (l *loop) abortRelist() {
	if l.rep == nil {
		return
	}
	if err := l.rep.r.Abort(); err != nil {
		l.logger.Error(err, "Aborting a relist failed")
	}
	l.rep = nil
}
