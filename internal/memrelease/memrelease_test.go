package memrelease

import (
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/testkit"
)

var timing = Timing{Delay: time.Second, MaxDelay: 10 * time.Second, MinInterval: 30 * time.Second}

// fake is a Releaser on a fake clock, counting the releases started.
type fake struct {
	*Releaser
	c       *clocktesting.FakeClock
	started atomic.Int32
}

func newFake(release func()) *fake {
	f := &fake{c: clocktesting.NewFakeClock(time.Unix(0, 0))}
	f.Releaser = New(f.c, timing, func() {
		f.started.Add(1)
		if release != nil {
			release()
		}
	})
	return f
}

// step advances the clock by d, then checks that the releases started
// and ended come to want: a release the step started is waited for.
func (f *fake) step(t *testing.T, d time.Duration, want int) {
	t.Helper()
	f.c.Step(d)
	f.mu.Lock()
	running := f.running
	f.mu.Unlock()
	if running {
		deadline := time.Now().Add(testkit.Timeout())
		for f.Released() < want {
			if time.Now().After(deadline) {
				t.Fatalf("a release started %v ago has not ended", testkit.Timeout())
			}
			time.Sleep(time.Millisecond)
		}
	}
	if got := int(f.started.Load()); got != want || f.Released() != want {
		t.Fatalf("at %v: %d releases started, %d ended; want %d", f.c.Since(time.Unix(0, 0)), got, f.Released(), want)
	}
}

func TestReleaseDelayAfterTheLastEnd(t *testing.T) {
	f := newFake(nil)
	f.End(true)
	f.step(t, timing.Delay-time.Millisecond, 0)
	f.step(t, time.Millisecond, 1)
	f.step(t, time.Hour, 1)
}

func TestEndWithoutAskingNeverReleases(t *testing.T) {
	f := newFake(nil)
	f.Begin()
	f.End(false)
	f.step(t, time.Hour, 0)
}

func TestBurstsInFlightPostponeTheRelease(t *testing.T) {
	f := newFake(nil)
	f.Begin()
	f.Begin()
	f.End(true) // the first list ends; the second still runs
	f.step(t, 5*timing.Delay, 0)
	f.End(false)
	f.step(t, timing.Delay-time.Millisecond, 0)
	f.step(t, time.Millisecond, 1)
}

func TestMaxDelayBoundsBurstsInFlight(t *testing.T) {
	f := newFake(nil)
	f.Begin() // never ends
	f.Begin()
	f.End(true)
	f.step(t, timing.MaxDelay-time.Millisecond, 0)
	f.step(t, time.Millisecond, 1)
}

func TestLaterEndsPostponeWithinMaxDelay(t *testing.T) {
	f := newFake(nil)
	for range 5 {
		f.End(true)
		f.step(t, timing.Delay/2, 0)
	}
	f.step(t, timing.Delay/2, 1)

	// Ends that never pause for Delay: released MaxDelay after the first.
	f = newFake(nil)
	for elapsed := time.Duration(0); elapsed < timing.MaxDelay; elapsed += timing.Delay / 2 {
		f.End(true)
		want := 0
		if elapsed+timing.Delay/2 >= timing.MaxDelay {
			want = 1
		}
		f.step(t, timing.Delay/2, want)
	}
}

func TestMinIntervalBetweenReleases(t *testing.T) {
	f := newFake(nil)
	f.End(true)
	f.step(t, timing.Delay, 1)
	f.End(true)
	f.step(t, timing.MinInterval-time.Millisecond, 1)
	f.step(t, time.Millisecond, 2)
}

func TestReleasesNeverOverlap(t *testing.T) {
	unblock := make(chan struct{})
	var f *fake
	f = newFake(func() {
		if f.started.Load() == 1 {
			f.End(true) // a relist ended while the release runs
			<-unblock
		}
	})
	f.End(true)
	f.c.Step(timing.Delay)
	deadline := time.Now().Add(testkit.Timeout())
	for f.started.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no release started")
		}
		time.Sleep(time.Millisecond)
	}
	f.c.Step(time.Hour) // no timer may start a second one while it runs
	if got := f.started.Load(); got != 1 {
		t.Fatalf("%d releases started while the first ran, want 1", got)
	}
	close(unblock)
	deadline = time.Now().Add(testkit.Timeout())
	for f.Released() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the release never ended")
		}
		time.Sleep(time.Millisecond)
	}
	// The End made during the release is served MinInterval after it.
	f.step(t, timing.MinInterval-time.Millisecond, 1)
	f.step(t, time.Millisecond, 2)
}
