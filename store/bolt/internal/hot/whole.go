package hot

import (
	"slices"
	"sort"
	"strings"
)

// A part whose tier is large enough comes to hold every object of its
// store: the store's writes put theirs (Committed), and bulk reads put
// what they decode while the tier has room (Fill). Such a part is whole,
// and Whole answers a bulk read from it, in key order, without reading
// the file: a list of every object then costs what client-go's does, a
// copy of pointers.
//
// A part is known to be whole once a bulk read of every stored object
// found each one in the part as stored, or put it there, and no write
// began or ended while it read, and none is under way (Complete): the
// store's batches change the part's seq before and after their
// transaction (Begin, then Committed or Aborted), every other write
// changes the DB's epoch before and after its own (Epoch). Its fast
// entries of the epoch are then the store's objects, and it keeps them
// sorted by key (an order). Every change keeps the order while it keeps
// the part whole: the store's batches do (their entries are fast, and go
// to the main segment), and everything else that may leave a stored
// object without a fast entry of the order's epoch drops it (an
// eviction, a point read that leaves an entry not fast, another write to
// the file, which changes the epoch), until the next bulk read of every
// object finds the part whole again. An order costs one pointer per
// entry, counted in entryOverhead: a whole part stays within the budget.

// order is the entries of a whole part sorted by key. Guarded by
// tier.mu.
type order struct {
	// epoch is the DB's epoch when the part was found whole; another
	// epoch means another write may have changed stored objects.
	epoch uint64
	// sorted holds the entries by key, the removed ones (entry.removed)
	// included until the next merge; added holds the entries added since
	// the last merge, unsorted.
	sorted, added []*entry
	removed       int
}

// Lookup is Peek for a bulk read whose transaction began after st: it
// also returns env's sum, for Fill, and a hit makes the entry fast if no
// write began since st, as a point read's does, so that a later Complete
// counts it.
func (p *Part) Lookup(key, env []byte, st Stamp) (obj interface{}, sum uint64, ok bool) {
	if p == nil {
		return nil, 0, false
	}
	sum = p.Sum(env)
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	e, ok := p.m[string(key)]
	if !ok || e.sum != sum {
		return nil, sum, false
	}
	if p.unchangedLocked(st) && (!e.fast || e.epoch < st.epoch) {
		e.fast, e.epoch = true, st.epoch
	}
	return e.obj, sum, true
}

// Fill caches obj, decoded by a bulk read whose transaction began after
// st from an envelope of envLen bytes with hash sum, under key, in the
// main segment, if the tier has room for it without evicting anything
// and if objects of its size (objects, the store's number of objects)
// would fit in the whole budget: a tier large enough to hold its store
// comes to hold all of it, and a smaller one is not churned by bulk
// reads. A bulk read never decides what a full tier keeps.
func (p *Part) Fill(key string, sum uint64, envLen int, obj interface{}, st Stamp, objects int) {
	if !p.fitsWhole(len(key), envLen, objects) {
		return
	}
	t := p.tier
	c := p.cost(key, envLen)
	t.mu.Lock()
	defer t.mu.Unlock()
	var old int64
	if e, ok := p.m[key]; ok {
		if e.sum == sum || !p.unchangedLocked(st) {
			// The same object, or one a batch may have written since
			// the read began: newer than obj, or checked by reads.
			return
		}
		old = e.cost
	}
	if t.used-old+c > t.budget {
		return
	}
	p.putLocked(key, sum, envLen, obj, p.unchangedLocked(st), st.epoch, false)
}

// Fits reports whether Fill would keep an object whose key and envelope
// are keyLen and envLen bytes long (objects, the store's number of
// objects) if it were called now: objects of its size fit in the whole
// budget, and the tier has room for it without evicting anything. A bulk
// read that decodes an object for Fill spends more to make it cheaper to
// keep, and only when it will likely be kept.
func (p *Part) Fits(keyLen, envLen, objects int) bool {
	if !p.fitsWhole(keyLen, envLen, objects) {
		return false
	}
	t := p.tier
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.used+cost(p.factor, keyLen, envLen) <= t.budget
}

// fitsWhole reports whether objects of the size of one whose key and
// envelope are keyLen and envLen bytes long, as many as objects, fit in
// the whole budget.
func (p *Part) fitsWhole(keyLen, envLen, objects int) bool {
	return p != nil && int64(objects)*cost(p.factor, keyLen, envLen) <= p.tier.budget
}

// Complete tells p that a bulk read whose transactions all began after st
// read every one of the store's objects, objects of them, and that each
// is now in p as stored (it found it with Lookup or put it with Fill). If
// no write began since st, p is whole from now on (see above), and
// Complete reports it.
func (p *Part) Complete(st Stamp, objects int) bool {
	if p == nil {
		return false
	}
	t := p.tier
	epoch, quiet := p.epoch.quiet()
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.order != nil && p.order.epoch == epoch {
		return true
	}
	// A write under way may have committed part of what the read saw
	// (its transactions may straddle the commit) without the tier
	// knowing yet.
	if !quiet || p.writing || !p.unchangedLocked(st) || st.epoch != epoch {
		return false
	}
	return p.findWholeLocked(int64(objects), epoch)
}

// Whole calls fn with the key and object of each of p's entries whose
// key starts with prefix, in key order, and returns true, when p is
// known to be whole; otherwise it calls nothing and returns false, and
// the caller reads the file. The objects are those the store's committed
// writes left, as a point read's Fast returns them. fn runs with the
// tier's lock held: it must not block nor call the tier.
func (p *Part) Whole(prefix string, fn func(key string, obj interface{})) bool {
	if p == nil {
		return false
	}
	t := p.tier
	epoch := p.epoch.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	o := p.order
	if o == nil || o.epoch != epoch {
		p.order = nil
		return false
	}
	o.mergeLocked()
	i := 0
	if prefix != "" {
		i = sort.Search(len(o.sorted), func(i int) bool { return o.sorted[i].key >= prefix })
	}
	for _, e := range o.sorted[i:] {
		if !strings.HasPrefix(e.key, prefix) {
			break
		}
		if !e.removed {
			fn(e.key, e.obj)
		}
	}
	return true
}

// findWholeLocked counts p's fast entries of epoch and, when they are as
// many as the store's objects, drops p's other entries (of keys the store
// no longer holds, or older objects: every stored object has a fast
// entry), moves its entries in probation to the main segment and gives p
// an order. tier.mu must be held.
func (p *Part) findWholeLocked(objects int64, epoch uint64) bool {
	p.order = nil
	var valid int64
	for _, e := range p.m {
		if e.fast && e.epoch == epoch {
			valid++
		}
	}
	if valid != objects {
		return false
	}
	sorted := make([]*entry, 0, valid)
	for _, e := range p.m {
		if e.fast && e.epoch == epoch {
			sorted = append(sorted, e)
			if e.prob {
				// Out of probation, whose share may shrink.
				p.tier.promoteLocked(e)
			}
		} else {
			p.tier.removeLocked(e)
		}
	}
	slices.SortFunc(sorted, func(a, b *entry) int { return strings.Compare(a.key, b.key) })
	p.order = &order{epoch: epoch, sorted: sorted}
	return true
}

// mergeLocked sorts the entries added since the last merge into sorted,
// and drops the removed ones when they are many. tier.mu must be held.
func (o *order) mergeLocked() {
	if len(o.added) == 0 && o.removed <= len(o.sorted)/8 {
		return
	}
	slices.SortFunc(o.added, func(a, b *entry) int { return strings.Compare(a.key, b.key) })
	out := make([]*entry, 0, len(o.sorted)-o.removed+len(o.added))
	rest := o.sorted
	for _, a := range o.added {
		if a.removed {
			continue
		}
		// The entries of sorted before a, copied as a run.
		i := sort.Search(len(rest), func(i int) bool { return rest[i].key >= a.key })
		out = appendLive(out, rest[:i])
		out = append(out, a)
		rest = rest[i:]
	}
	o.sorted, o.added, o.removed = appendLive(out, rest), nil, 0
}

// appendLive appends the entries of run that are not removed.
func appendLive(dst, run []*entry) []*entry {
	for _, e := range run {
		if !e.removed {
			dst = append(dst, e)
		}
	}
	return dst
}

// keptLocked records in p's order, if p has one, that e was put (added
// new when added, else changed in place): the order is dropped unless e
// is a fast entry of its epoch. tier.mu must be held.
func (p *Part) keptLocked(e *entry, added bool) {
	o := p.order
	if o == nil {
		return
	}
	if !e.fast || e.epoch != o.epoch {
		p.order = nil
		return
	}
	if added {
		o.added = append(o.added, e)
		o.bound()
	}
}

// bound merges o when the entries added and removed since the last merge
// are many, so that an order holds no more than a few removed entries
// whatever the churn between bulk reads. tier.mu must be held.
func (o *order) bound() {
	if len(o.added)+o.removed > len(o.sorted)/4+64 {
		o.mergeLocked()
	}
}

// removedLocked records in p's order, if p has one, that e left the
// tier: as the store's delete when deleted, else (an eviction) the part
// is no longer whole. tier.mu must be held.
func (p *Part) removedLocked(e *entry, deleted bool) {
	e.removed = true
	o := p.order
	if o == nil {
		return
	}
	if !deleted {
		p.order = nil
		return
	}
	o.removed++
	o.bound()
}
