package memrelease

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// newFake returns a Releaser on a fake clock (whose AfterFunc callbacks run
// within Step), counting its releases.
func newFake() (*Releaser, *clocktesting.FakeClock, *int) {
	c := clocktesting.NewFakeClock(time.Unix(0, 0))
	n := new(int)
	return New(c, time.Second, 10*time.Second, func() { *n++ }), c, n
}

func TestReleaseAfterDelay(t *testing.T) {
	r, c, n := newFake()
	r.Request()
	c.Step(999 * time.Millisecond)
	if *n != 0 {
		t.Fatalf("released %d times before the delay", *n)
	}
	c.Step(time.Millisecond)
	if *n != 1 || r.Released() != 1 {
		t.Fatalf("released %d times (Released %d) at the delay, want 1", *n, r.Released())
	}
	c.Step(time.Hour)
	if *n != 1 {
		t.Fatalf("released %d times without a new request, want 1", *n)
	}
}

func TestBurstCoalesces(t *testing.T) {
	r, c, n := newFake()
	for range 5 {
		r.Request()
		c.Step(500 * time.Millisecond)
	}
	if *n != 0 {
		t.Fatalf("released %d times within a burst", *n)
	}
	c.Step(500 * time.Millisecond)
	if *n != 1 {
		t.Fatalf("released %d times after a burst, want 1", *n)
	}
	r.Request()
	c.Step(time.Second)
	if *n != 2 {
		t.Fatalf("released %d times after a second burst, want 2", *n)
	}
}

func TestEndlessRequestsReleaseByMaxDelay(t *testing.T) {
	r, c, n := newFake()
	start := c.Now()
	for *n == 0 {
		if c.Since(start) > 10*time.Second {
			t.Fatalf("no release %v after the first request", c.Since(start))
		}
		r.Request()
		c.Step(100 * time.Millisecond)
	}
	if got := c.Since(start); got != 10*time.Second {
		t.Fatalf("released %v after the first request, want MaxDelay", got)
	}
}

func TestRequestDuringReleaseStartsABurst(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Unix(0, 0))
	var r *Releaser
	n := 0
	requested := make(chan struct{})
	r = New(c, time.Second, 10*time.Second, func() {
		n++
		if n == 1 {
			// Within Step, with the fake clock locked: request from
			// another goroutine, as an informer would. Its Request
			// returns once Step has.
			go func() { r.Request(); close(requested) }()
		}
	})
	r.Request()
	c.Step(time.Second)
	<-requested
	c.Step(time.Second)
	if n != 2 {
		t.Fatalf("released %d times, want 2", n)
	}
}
