package soak

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warmcache/warmcache/internal/soakctl"
)

// serverHistory is what the history checks need of the oracle.
type serverHistory interface {
	// WaitProgress waits until every write up to rev is known.
	WaitProgress(ctx context.Context, rev int64) error
	// Revision returns the server's current revision.
	Revision(ctx context.Context) (int64, error)
	// MatchState finds a revision in [lo, hi] at which the resource's
	// objects were exactly want.
	MatchState(resource string, want map[string]int64, lo, hi int64) (rev int64, ok bool, diff string)
	// Wrote reports whether the server put (or deleted) key at rev.
	Wrote(resource, key string, rev int64, deleted bool) bool
}

// oracleWait bounds a wait for the oracle to know a revision a handler
// was told: it follows etcd by milliseconds, so a minute is a failure.
const oracleWait = time.Minute

// runCheck checks the events one run of the controller logged, handler by
// handler, as they come: client-go's handler contract (no add for a key
// the handler holds, an update from the last state it was told, no delete
// of a key it does not hold), every state told one the server wrote, and
// the initial list of each handler exactly the server's objects at one
// revision between the start of the run and the end of that list.
//
// apply is called by one goroutine, in log order; the other methods may
// be called concurrently with it.
type runCheck struct {
	run      int
	server   serverHistory
	lo       int64 // the server's revision before the run started
	report   func(check, detail string)
	handlers map[string]*handlerCheck

	runtime  atomic.Pointer[soakctl.Runtime] // the last runtime line
	events   atomic.Int64                    // object events checked
	initials atomic.Int64                    // initial lists checked

	// mu guards the handlers' held and synced, and changed.
	mu      sync.Mutex
	changed chan struct{}
}

// handlerCheck is the state of one handler.
type handlerCheck struct {
	resource    string
	held        map[string]int64 // what the handler was told, folded
	initial     map[string]int64 // its initial list, until it ends
	initialDone bool
	initialRev  int64 // the server's revision its initial list matched
	synced      bool  // its synced line was logged
}

func newRunCheck(run int, server serverHistory, lo int64, report func(check, detail string)) *runCheck {
	c := &runCheck{run: run, server: server, lo: lo, report: report, handlers: map[string]*handlerCheck{}, changed: make(chan struct{})}
	for _, r := range soakctl.Resources {
		c.handlers[r.Name] = &handlerCheck{resource: r.Name, held: map[string]int64{}, initial: map[string]int64{}}
	}
	return c
}

// Check names of the findings of runCheck.
const (
	CheckHandlerContract = "handler contract"
	CheckInitialList     = "initial list"
	CheckPhantom         = "state the server never wrote"
	CheckEventLog        = "event log"
)

func (c *runCheck) fail(check, format string, args ...any) {
	c.report(check, fmt.Sprintf("run %d: ", c.run)+fmt.Sprintf(format, args...))
}

// apply checks one event and folds it into its handler's state.
func (c *runCheck) apply(ctx context.Context, e soakctl.Event) {
	defer c.notify()
	if e.Type == soakctl.TypeRuntime {
		c.runtime.Store(e.Runtime)
		return
	}
	h := c.handlers[e.Resource]
	if h == nil {
		c.fail(CheckEventLog, "a %s line for unknown resource %q", e.Type, e.Resource)
		return
	}
	if e.Type == soakctl.TypeSynced {
		c.endInitial(ctx, h)
		c.mu.Lock()
		h.synced = true
		c.mu.Unlock()
		return
	}
	c.events.Add(1)
	rv, err := strconv.ParseInt(e.ResourceVersion, 10, 64)
	if err != nil {
		c.fail(CheckEventLog, "%s %s %s: resourceVersion %q: %v", e.Resource, e.Type, e.Key, e.ResourceVersion, err)
		return
	}
	if e.Type == soakctl.TypeAdd && e.Initial {
		switch _, dup := h.initial[e.Key]; {
		case h.initialDone:
			c.fail(CheckHandlerContract, "%s: initial-list add of %s@%d after the initial list ended", e.Resource, e.Key, rv)
		case dup:
			c.fail(CheckHandlerContract, "%s: %s twice in the initial list", e.Resource, e.Key)
		default:
			h.initial[e.Key] = rv
		}
		c.set(h, e.Key, rv, true)
		return
	}
	c.endInitial(ctx, h)
	held, holds := h.held[e.Key]
	switch e.Type {
	case soakctl.TypeAdd:
		if holds {
			c.fail(CheckHandlerContract, "%s: add of %s@%d, which the handler holds at %d", e.Resource, e.Key, rv, held)
		}
		c.checkWritten(ctx, e.Resource, e.Key, rv, false)
		c.set(h, e.Key, rv, true)
	case soakctl.TypeUpdate:
		old, err := strconv.ParseInt(e.OldResourceVersion, 10, 64)
		switch {
		case err != nil:
			c.fail(CheckEventLog, "%s update %s: old resourceVersion %q: %v", e.Resource, e.Key, e.OldResourceVersion, err)
		case !holds:
			c.fail(CheckHandlerContract, "%s: update of %s from %d to %d, a key the handler does not hold", e.Resource, e.Key, old, rv)
		case old != held:
			c.fail(CheckHandlerContract, "%s: update of %s from %d to %d, but the handler was last told %d", e.Resource, e.Key, old, rv, held)
		case rv < old:
			c.fail(CheckHandlerContract, "%s: update of %s back from %d to %d", e.Resource, e.Key, old, rv)
		}
		if rv != old {
			c.checkWritten(ctx, e.Resource, e.Key, rv, false)
		}
		c.set(h, e.Key, rv, true)
	case soakctl.TypeDelete:
		switch {
		case !holds:
			c.fail(CheckHandlerContract, "%s: delete of %s@%d, a key the handler does not hold", e.Resource, e.Key, rv)
		case e.FinalStateUnknown && rv != held:
			c.fail(CheckHandlerContract, "%s: DeletedFinalStateUnknown of %s at %d, but the handler was last told %d", e.Resource, e.Key, rv, held)
		case !e.FinalStateUnknown && rv < held:
			c.fail(CheckHandlerContract, "%s: delete of %s at %d, older than the %d the handler was last told", e.Resource, e.Key, rv, held)
		}
		if !e.FinalStateUnknown {
			c.checkWritten(ctx, e.Resource, e.Key, rv, true)
		}
		c.set(h, e.Key, 0, false)
	default:
		c.fail(CheckEventLog, "unknown event type %q", e.Type)
	}
}

// checkWritten reports a state (or delete) the server never wrote.
func (c *runCheck) checkWritten(ctx context.Context, resource, key string, rv int64, deleted bool) {
	wctx, cancel := context.WithTimeout(ctx, oracleWait)
	defer cancel()
	if err := c.server.WaitProgress(wctx, rv); err != nil {
		if ctx.Err() == nil {
			c.fail(CheckPhantom, "%s %s@%d: the server's history does not reach it: %v", resource, key, rv, err)
		}
		return
	}
	if !c.server.Wrote(resource, key, rv, deleted) {
		what := "an object"
		if deleted {
			what = "a delete"
		}
		c.fail(CheckPhantom, "%s: told %s of %s at %d, which the server never wrote", resource, what, key, rv)
	}
}

// endInitial checks h's initial list when it has ended: the first event
// other than an initial-list add, or the synced line.
func (c *runCheck) endInitial(ctx context.Context, h *handlerCheck) {
	if h.initialDone {
		return
	}
	h.initialDone = true
	initial := h.initial
	h.initial = nil
	// Read now, the revision bounds the moment the list ended from above.
	wctx, cancel := context.WithTimeout(ctx, oracleWait)
	defer cancel()
	hi, err := c.server.Revision(wctx)
	if err == nil {
		err = c.server.WaitProgress(wctx, hi)
	}
	if err != nil {
		if ctx.Err() == nil {
			c.fail(CheckInitialList, "%s: cannot read the server's history: %v", h.resource, err)
		}
		return
	}
	rev, ok, diff := c.server.MatchState(h.resource, initial, c.lo, hi)
	c.initials.Add(1)
	if !ok {
		c.fail(CheckInitialList, "%s: the initial list of %d objects is the server's state at no revision from %d (the start) to %d (its end); %s",
			h.resource, len(initial), c.lo, hi, diff)
		return
	}
	h.initialRev = rev
}

func (c *runCheck) set(h *handlerCheck, key string, rv int64, present bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if present {
		h.held[key] = rv
	} else {
		delete(h.held, key)
	}
}

func (c *runCheck) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.changed)
	c.changed = make(chan struct{})
}

// Converged reports whether every handler has synced and holds exactly
// want (resource -> key -> resourceVersion); if not, why, and a channel
// closed at the next change.
func (c *runCheck) Converged(want map[string]map[string]int64) (bool, string, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range soakctl.Resources {
		h := c.handlers[r.Name]
		if !h.synced {
			return false, r.Name + " not synced", c.changed
		}
		if d := diffStates(h.held, want[r.Name]); d != "" {
			return false, r.Name + ": " + d, c.changed
		}
	}
	return true, "", c.changed
}

// Synced reports whether every handler has logged its synced line.
func (c *runCheck) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.handlers {
		if !h.synced {
			return false
		}
	}
	return true
}

// Events returns how many object events were checked.
func (c *runCheck) Events() int64 { return c.events.Load() }

// InitialLists returns how many initial lists were checked.
func (c *runCheck) InitialLists() int { return int(c.initials.Load()) }

// Runtime returns the last runtime line, nil before the first.
func (c *runCheck) Runtime() *soakctl.Runtime { return c.runtime.Load() }

// Phase describes how far the run got, for a kill's record: "starting"
// (no handler told anything), "initial list" (some handler not synced),
// or "synced".
func (c *runCheck) Phase() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	told, synced := false, true
	for _, h := range c.handlers {
		told = told || len(h.held) > 0 || h.synced
		synced = synced && h.synced
	}
	switch {
	case synced:
		return "synced"
	case told:
		return "initial list"
	default:
		return "starting"
	}
}
