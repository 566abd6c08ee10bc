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
// The bursts of a process are counted together: a release waits until
// none is in flight (a factory's informers list at once, and finish at
// different times), then Delay more, but never more than MaxDelay after
// the first burst that asked for it; releases are at least MinInterval
// apart, and never overlap.
package memrelease

import (
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

const (
	// Delay is how long the default Releaser waits, once no burst is in
	// flight, before it releases.
	Delay = time.Second
	// MaxDelay bounds how long bursts in flight postpone a release asked
	// for.
	MaxDelay = 10 * time.Second
	// MinInterval is the least time between the end of one release of
	// the default Releaser and the start of the next.
	MinInterval = 30 * time.Second
)

// Default is the process's Releaser: Delay, MaxDelay, MinInterval, the
// real clock and debug.FreeOSMemory.
var Default = New(clock.RealClock{}, Timing{Delay: Delay, MaxDelay: MaxDelay, MinInterval: MinInterval}, debug.FreeOSMemory)

// Timing is when a Releaser releases: Delay after the last burst ended,
// once none is in flight, or MaxDelay after the first burst that asked
// for a release ended, whichever comes first; and at least MinInterval
// after the previous release ended.
type Timing struct {
	Delay, MaxDelay, MinInterval time.Duration
}

// Releaser runs release once after bursts of allocation that ask for it
// (Timing). release runs on a goroutine of its own, never on a caller's,
// and never twice at once. It is safe for concurrent use. Its timers'
// callbacks never read or arm the clock, so that a fake clock may run them
// within its Step.
type Releaser struct {
	clock   clock.WithDelayedExecution
	timing  Timing
	release func()

	mu          sync.Mutex
	inFlight    int
	asked       bool      // a release is asked for and has not started
	first, last time.Time // when the first and the last burst that asked ended
	running     bool
	ended       time.Time // when the last release ended
	gen         int       // the armed timer's generation; older ones do nothing
	timer       clock.Timer
	released    int
}

// New returns a Releaser that runs release on c's timers.
func New(c clock.WithDelayedExecution, t Timing, release func()) *Releaser {
	return &Releaser{clock: c, timing: t, release: release}
}

// Begin records that a burst started.
func (r *Releaser) Begin() {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight++
	r.armLocked(now)
}

// End records that a burst begun with Begin ended, and whether its garbage
// is worth a release. Every Begin must have its End; an End without one
// only asks.
func (r *Releaser) End(release bool) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inFlight > 0 {
		r.inFlight--
	}
	if release {
		if !r.asked {
			r.first = now
		}
		r.asked, r.last = true, now
	}
	r.armLocked(now)
}

// Released returns how many releases have ended.
func (r *Releaser) Released() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released
}

// dueLocked returns when the release asked for is due.
func (r *Releaser) dueLocked() time.Time {
	due := r.first.Add(r.timing.MaxDelay)
	if r.inFlight == 0 {
		if d := r.last.Add(r.timing.Delay); d.Before(due) {
			due = d
		}
	}
	if !r.ended.IsZero() {
		if d := r.ended.Add(r.timing.MinInterval); d.After(due) {
			due = d
		}
	}
	return due
}

// armLocked arms the timer for the release asked for, at its due time
// from now, replacing the one armed, if any release is asked for and none
// is running (the running one arms it when it ends).
func (r *Releaser) armLocked(now time.Time) {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.gen++
	if !r.asked || r.running {
		return
	}
	gen := r.gen
	r.timer = r.clock.AfterFunc(max(r.dueLocked().Sub(now), 0), func() { r.fire(gen) })
}

// fire starts the release, unless a later Begin or End armed another
// timer since.
func (r *Releaser) fire(gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen || !r.asked || r.running {
		return
	}
	r.asked, r.running, r.timer = false, true, nil
	go r.run()
}

func (r *Releaser) run() {
	r.release()
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running, r.ended = false, now
	r.armLocked(now)
	r.released++
}
