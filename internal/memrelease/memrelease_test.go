package memrelease

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The tests share the process's counts: none runs in parallel, and each
// ends every burst it begins.

const maxDelay = 10 * time.Second

// counter counts releases.
type counter struct{ n atomic.Int32 }

func (c *counter) release() { c.n.Add(1) }

// check waits until every goroutine of the bubble is blocked, then checks
// the releases counted.
func (c *counter) check(t *testing.T, want int32) {
	t.Helper()
	synctest.Wait()
	if got := c.n.Load(); got != want {
		t.Fatalf("at %v: %d releases, want %d", time.Now().UTC().Format("15:04:05.000"), got, want)
	}
}

func TestReleaseAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counter
		go after(t.Context(), Ask(), delay, maxDelay, c.release)
		time.Sleep(delay - time.Millisecond)
		c.check(t, 0)
		time.Sleep(time.Millisecond)
		c.check(t, 1)
	})
}

func TestBurstsInFlightPostponeTheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counter
		Begin()
		ended := false
		t.Cleanup(func() {
			if !ended {
				End()
			}
		})
		go after(t.Context(), Ask(), delay, maxDelay, c.release)
		time.Sleep(5*delay + delay/2)
		c.check(t, 0)
		End()
		ended = true
		time.Sleep(delay / 2) // the next look, a whole Delay after the last
		c.check(t, 1)
	})
}

func TestMaxDelayBoundsBurstsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counter
		Begin()
		t.Cleanup(End)
		go after(t.Context(), Ask(), delay, maxDelay, c.release)
		time.Sleep(maxDelay - time.Millisecond)
		c.check(t, 0)
		time.Sleep(time.Millisecond)
		c.check(t, 1)
	})
}

func TestOneReleaseServesEveryTicketBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counter
		first := Ask()
		go after(t.Context(), first, delay, maxDelay, c.release)
		time.Sleep(delay / 2)
		second := Ask()
		go after(t.Context(), second, delay, maxDelay, c.release)
		time.Sleep(2 * delay)
		c.check(t, 1)
		if first.Owed() || second.Owed() {
			t.Fatal("a ticket asked before the release is still owed")
		}
	})
}

// TestTicketAskedDuringAReleaseGetsAnother runs on the real clock, with
// short delays: a release waiting for the one that runs blocks on a mutex,
// which a synctest bubble does not count as blocked.
func TestTicketAskedDuringAReleaseGetsAnother(t *testing.T) {
	var c counter
	unblock := make(chan struct{})
	asked := make(chan Ticket, 1)
	blocking := func() {
		asked <- Ask() // a burst ended while the release runs
		<-unblock
		c.release()
	}
	const d = time.Millisecond
	go after(t.Context(), Ask(), d, 10*d, blocking)
	during := <-asked
	if !during.Owed() {
		t.Fatal("a ticket asked during the release is not owed")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		after(t.Context(), during, d, 10*d, c.release)
	}()
	// Its wait is over long before the first release returns: it must
	// wait for it, not run beside it.
	time.Sleep(50 * d)
	if got := c.n.Load(); got != 0 {
		t.Fatalf("%d releases ran beside the first, want none", got)
	}
	close(unblock)
	<-done
	if got := c.n.Load(); got != 2 {
		t.Fatalf("%d releases, want 2: the ticket asked during the first gets its own", got)
	}
}

func TestCanceledWaitReleasesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counter
		ctx, cancel := context.WithCancel(t.Context())
		go after(ctx, Ask(), delay, maxDelay, c.release)
		time.Sleep(delay / 2)
		cancel()
		time.Sleep(maxDelay)
		c.check(t, 0)
	})
}
