package reflector

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// backoff is an exponential backoff that starts over after reset without
// being used, like client-go's (deprecated) NewExponentialBackoffManager,
// on an injectable clock. It is used from one goroutine.
type backoff struct {
	clock   clock.PassiveClock
	initial wait.Backoff
	cur     wait.Backoff
	reset   time.Duration
	last    time.Time
}

func newBackoff(b wait.Backoff, reset time.Duration, c clock.PassiveClock) *backoff {
	return &backoff{clock: c, initial: b, cur: b, reset: reset}
}

// next returns the next wait.
func (b *backoff) next() time.Duration {
	now := b.clock.Now()
	if !b.last.IsZero() && now.Sub(b.last) >= b.reset {
		b.cur = b.initial
	}
	b.last = now
	return b.cur.Step()
}

// retryDelay is the wait before retrying after err: the next backoff, or
// the server's Retry-After when that is longer.
func (r *Reflector) retryDelay(err error) time.Duration {
	d := r.backoff.next()
	if secs, ok := apierrors.SuggestsClientDelay(err); ok {
		if ra := time.Duration(secs) * time.Second; ra > d {
			d = ra
		}
	}
	return d
}

// sleep waits d on the reflector's clock; it returns false if ctx ended
// first.
func (r *Reflector) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
