package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// pokeInterval is how often waitProgress asks for news.
const pokeInterval = 100 * time.Millisecond

// version is one write of a key: a put of the object at rev, or its
// delete at rev. In kube-apiserver's etcd storage an object's
// resourceVersion is the revision of the put that wrote it, and a watch's
// delete event carries the revision of the delete.
type version struct {
	rev     int64
	deleted bool
}

// change is one write of a resource's key.
type change struct {
	resource string
	key      string
	rev      int64
	deleted  bool
}

// resourceHistory is every write of one resource's keys that the history
// has seen.
type resourceHistory struct {
	keys map[string][]version // by key, in revision order
	log  []change             // every write, in revision order
}

// history is the server's history of the soak's resources: the writes to
// their keys in etcd, in revision order, from a revision on. It is the
// soak's oracle: the server's state of a resource at any revision it
// covers, and whether an object's resourceVersion is one the server ever
// wrote. Its methods are safe for concurrent use.
type history struct {
	// mu guards the fields below.
	mu       sync.Mutex
	res      map[string]*resourceHistory
	progress int64         // every write at or below it is recorded
	changed  chan struct{} // closed and replaced when progress moves or err is set
	err      error         // the history stopped: it misses writes from here on
}

func newHistory(resources ...string) *history {
	h := &history{res: map[string]*resourceHistory{}, changed: make(chan struct{})}
	for _, r := range resources {
		h.res[r] = &resourceHistory{keys: map[string][]version{}}
	}
	return h
}

// record adds writes of one revision or more, in revision order, all
// after the progress so far, and moves the progress to through.
func (h *history) record(cs []change, through int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cs {
		r, ok := h.res[c.resource]
		if !ok {
			return fmt.Errorf("soak: history: unknown resource %q", c.resource)
		}
		if n := len(r.log); n > 0 && r.log[n-1].rev > c.rev {
			return fmt.Errorf("soak: history: %s %s written at revision %d after revision %d", c.resource, c.key, c.rev, r.log[n-1].rev)
		}
		r.log = append(r.log, c)
		r.keys[c.key] = append(r.keys[c.key], version{rev: c.rev, deleted: c.deleted})
	}
	if through > h.progress {
		h.progress = through
		h.notifyLocked()
	}
	return nil
}

// fail records that the history stopped.
func (h *history) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
		h.notifyLocked()
	}
}

// notifyLocked wakes the waiters of h.changed.
func (h *history) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Err returns why the history stopped, nil while it runs.
func (h *history) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Progress returns the revision up to which every write is recorded.
func (h *history) Progress() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.progress
}

// waitProgress waits until every write up to rev is recorded; poke is
// called while it waits, every pokeInterval, to ask for news (etcd's
// progress request: its answer is the only news of revisions that wrote
// none of the recorded keys).
func (h *history) waitProgress(ctx context.Context, rev int64, poke func()) error {
	for {
		h.mu.Lock()
		p, err, ch := h.progress, h.err, h.changed
		h.mu.Unlock()
		switch {
		case p >= rev:
			return nil
		case err != nil:
			return err
		}
		if poke != nil {
			poke()
		}
		t := time.NewTimer(pokeInterval)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("soak: history at revision %d, waiting for %d: %w", p, rev, context.Cause(ctx))
		}
		t.Stop()
	}
}

// stateAtLocked returns the resource's objects (key -> resourceVersion)
// at revision rev.
func (r *resourceHistory) stateAtLocked(rev int64) map[string]int64 {
	out := map[string]int64{}
	for k, vs := range r.keys {
		i := sort.Search(len(vs), func(i int) bool { return vs[i].rev > rev }) - 1
		if i >= 0 && !vs[i].deleted {
			out[k] = vs[i].rev
		}
	}
	return out
}

// StateAt returns the resource's objects (key -> resourceVersion) at
// revision rev, which the caller has waited for (waitProgress).
func (h *history) StateAt(resource string, rev int64) map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.res[resource]
	if r == nil {
		return nil
	}
	return r.stateAtLocked(rev)
}

// Wrote reports whether the server wrote key of resource at revision rev:
// a put when deleted is false, a delete when it is true.
func (h *history) Wrote(resource, key string, rev int64, deleted bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.res[resource]
	if r == nil {
		return false
	}
	vs := r.keys[key]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].rev >= rev })
	return i < len(vs) && vs[i].rev == rev && vs[i].deleted == deleted
}

// Writes returns the number of writes recorded for resource.
func (h *history) Writes(resource string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.res[resource]; r != nil {
		return len(r.log)
	}
	return 0
}

// MatchState looks for a revision in [lo, hi] at which the resource's
// objects were exactly want (key -> resourceVersion). It returns the first
// such revision, or ok false and how want differs from the state at the
// revision in the range where the two differed least.
func (h *history) MatchState(resource string, want map[string]int64, lo, hi int64) (rev int64, ok bool, diff string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.res[resource]
	if r == nil {
		return 0, false, "unknown resource " + resource
	}
	state := r.stateAtLocked(lo)
	differ := 0
	for k, v := range state {
		if want[k] != v {
			differ++
		}
	}
	for k := range want {
		if _, ok := state[k]; !ok {
			differ++
		}
	}
	best, bestRev := differ, lo
	if differ == 0 {
		return lo, true, ""
	}
	start := sort.Search(len(r.log), func(i int) bool { return r.log[i].rev > lo })
	for i := start; i < len(r.log) && r.log[i].rev <= hi; i++ {
		c := r.log[i]
		w, wanted := want[c.key]
		before, had := state[c.key]
		wasOK := had == wanted && before == w
		if c.deleted {
			delete(state, c.key)
		} else {
			state[c.key] = c.rev
		}
		now, has := state[c.key]
		isOK := has == wanted && now == w
		switch {
		case wasOK && !isOK:
			differ++
		case !wasOK && isOK:
			differ--
		}
		if i+1 < len(r.log) && r.log[i+1].rev == c.rev {
			continue // the rest of this revision's writes first
		}
		if differ == 0 {
			return c.rev, true, ""
		}
		if differ < best {
			best, bestRev = differ, c.rev
		}
	}
	return 0, false, fmt.Sprintf("closest at revision %d: %s", bestRev, diffStates(want, r.stateAtLocked(bestRev)))
}

// diffStates describes how got differs from want (key ->
// resourceVersion), "" when equal; at most ten differences are named.
func diffStates(got, want map[string]int64) string {
	var out []string
	for k, rv := range want {
		switch g, ok := got[k]; {
		case !ok:
			out = append(out, fmt.Sprintf("missing %s@%d", k, rv))
		case g != rv:
			out = append(out, fmt.Sprintf("%s@%d where the server has %d", k, g, rv))
		}
	}
	for k, rv := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("phantom %s@%d", k, rv))
		}
	}
	return summary(out, "differences")
}

// summary names the differences out, sorted, at most ten of them, after
// their number and what they are ("3 objects: ..."); "" for none.
func summary(out []string, what string) string {
	if len(out) == 0 {
		return ""
	}
	sort.Strings(out)
	n := len(out)
	if n > 10 {
		out = append(out[:10], fmt.Sprintf("... %d more", n-10))
	}
	return fmt.Sprintf("%d %s: %s", n, what, strings.Join(out, "; "))
}
