// Package memrelease returns to the operating system the memory that a
// burst of allocation left behind, once the burst is over.
//
// A relist decodes, encodes and writes every object of a resource: far
// more allocation than the informer's steady state, all of it garbage
// once the relist commits. The Go runtime sizes its next heap goal from
// the live heap of its last collection, which falls in the middle of the
// burst, and keeps the freed pages up to that goal resident. In a
// controller that then goes quiet, nothing collects again until the
// runtime's forced collection two minutes later, and its resident set
// stays at the burst's size. A collection after the burst, followed by
// returning the free pages (runtime/debug.FreeOSMemory), brings it down
// to what the process holds.
//
// Requests are coalesced process-wide: informers that relist together (a
// factory's cold start) cause one release, Delay after the last request,
// and never later than MaxDelay after the first.
package memrelease

import (
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

const (
	// Delay is how long the default Releaser waits after a request for
	// more requests before it releases.
	Delay = time.Second
	// MaxDelay bounds how long requests arriving without pause postpone
	// the default Releaser's release.
	MaxDelay = 10 * time.Second
)

// Default is the process's Releaser: Delay, MaxDelay, the real clock and
// debug.FreeOSMemory.
var Default = New(clock.RealClock{}, Delay, MaxDelay, debug.FreeOSMemory)

// Request asks Default for a release.
func Request() { Default.Request() }

// Releaser runs release once after each burst of requests: delay after
// the last request of the burst, or maxDelay after its first, whichever
// comes first. release runs on a goroutine of its own (clock.AfterFunc),
// never on the requester's. A request made while release runs starts a
// new burst. It is safe for concurrent use.
type Releaser struct {
	clock           clock.WithDelayedExecution
	delay, maxDelay time.Duration
	release         func()

	mu       sync.Mutex
	timer    clock.Timer // pending release, nil if none
	first    time.Time   // the first request of the pending burst
	released int
}

// New returns a Releaser that runs release on c's timers.
func New(c clock.WithDelayedExecution, delay, maxDelay time.Duration, release func()) *Releaser {
	return &Releaser{clock: c, delay: delay, maxDelay: maxDelay, release: release}
}

// Request asks for a release after the current burst of requests. It
// never blocks on a release.
func (r *Releaser) Request() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if r.timer == nil {
		r.first = now
		r.timer = r.clock.AfterFunc(r.delay, r.fire)
		return
	}
	wait := min(r.delay, r.first.Add(r.maxDelay).Sub(now))
	if wait > 0 && r.timer.Stop() {
		// Stop false: the release is due, and covers this request,
		// made before it runs.
		r.timer.Reset(wait)
	}
}

// Released returns how many times release has run.
func (r *Releaser) Released() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released
}

func (r *Releaser) fire() {
	r.mu.Lock()
	r.timer = nil
	r.mu.Unlock()
	r.release()
	r.mu.Lock()
	r.released++
	r.mu.Unlock()
}
