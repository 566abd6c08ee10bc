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
// The bursts of a process are counted together (Begin, End): a release
// asked for (Ask) waits a second, then until no burst is in flight (a
// factory's informers list at once and finish at different times), at
// most MaxDelay in all; one release serves every request made before it
// started, and releases never overlap.
//
// The wait runs on a goroutine of the asker's (After), with its own timer,
// never on a timer or goroutine the process shares: in a testing/synctest
// bubble, a timer made there must not be stopped or reset from outside it.
package memrelease

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"
)

const (
	// delay is how long a release waits after it was asked for, and
	// between two looks at the bursts in flight.
	delay = time.Second
	// MaxDelay bounds how long bursts in flight postpone a release.
	MaxDelay = 10 * time.Second
)

var (
	inFlight atomic.Int64
	// started counts the releases started: a Ticket holds its value when
	// it was asked for.
	started atomic.Uint64
	// slot is held by the release that runs, and by the one about to.
	slot = make(chan struct{}, 1)
)

// Begin records that a burst started.
func Begin() { inFlight.Add(1) }

// End records that a burst begun with Begin ended. Every Begin must have
// its End.
func End() { inFlight.Add(-1) }

// A Ticket is a release asked for: owed until a release starts.
type Ticket uint64

// Ask asks for a release of the garbage of the bursts ended so far.
func Ask() Ticket { return Ticket(started.Load()) }

// Owed reports whether no release started since t was asked for.
func (t Ticket) Owed() bool { return started.Load() == uint64(t) }

// release runs fn once the release running, if any, has ended, if t is
// still owed then, and reports whether it ran it: one release serves
// every ticket asked for before it started. It gives up when ctx is done
// first.
func (t Ticket) release(ctx context.Context, fn func()) bool {
	select {
	case slot <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-slot }()
	if !started.CompareAndSwap(uint64(t), uint64(t)+1) {
		return false
	}
	fn()
	return true
}

// After waits a second, then, a second at a time, until no burst is in
// flight, at most MaxDelay in all, and releases t with debug.FreeOSMemory
// unless a release started since it was asked for. It returns early when
// ctx is done, unless the release has started. Its timer is its own, on
// the real clock (a bubble's in a testing/synctest bubble).
func After(ctx context.Context, t Ticket) { after(ctx, t, delay, MaxDelay, debug.FreeOSMemory) }

func after(ctx context.Context, t Ticket, delay, maxDelay time.Duration, release func()) {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for waited := delay; ; waited += delay {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if !t.Owed() {
			return
		}
		if inFlight.Load() <= 0 || waited >= maxDelay {
			t.release(ctx, release)
			return
		}
		timer.Reset(min(delay, maxDelay-waited))
	}
}
