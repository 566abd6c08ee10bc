package hostload

import (
	"context"
	"runtime"
	"time"
)

// IdleOptions configures WaitIdle.
type IdleOptions struct {
	// MaxBusy is the share of the machine's CPUs (0 to 1) that may be busy
	// for the machine to count as idle. Default 0.1.
	MaxBusy float64
	// Window is how long the machine is watched at a time. Default 2s.
	Window time.Duration
	// Timeout is how long WaitIdle waits at most. Default 0: it watches
	// one window.
	Timeout time.Duration
}

// WaitIdle waits until the CPUs were busy less than opts.MaxBusy of the
// time over a window, or until opts.Timeout has passed. It returns
// whether the machine was idle, and the busy share of the last window.
func WaitIdle(ctx context.Context, opts IdleOptions) (idle bool, busy float64, err error) {
	if opts.MaxBusy == 0 {
		opts.MaxBusy = 0.1
	}
	if opts.Window == 0 {
		opts.Window = 2 * time.Second
	}
	deadline := time.Now().Add(opts.Timeout)
	for {
		before, err := ReadCPU()
		if err != nil {
			return false, 0, err
		}
		t := time.NewTimer(opts.Window)
		start := time.Now()
		select {
		case <-ctx.Done():
			t.Stop()
			return false, 0, ctx.Err()
		case <-t.C:
		}
		after, err := ReadCPU()
		if err != nil {
			return false, 0, err
		}
		busy = BusyShare(before, after, time.Since(start), runtime.NumCPU())
		if busy < opts.MaxBusy {
			return true, busy, nil
		}
		if !time.Now().Before(deadline) {
			return false, busy, nil
		}
	}
}

// BusyShare is the share (0 to 1) of cpus CPUs' time over elapsed that
// the readings before and after count as busy.
func BusyShare(before, after CPU, elapsed time.Duration, cpus int) float64 {
	if elapsed <= 0 || cpus <= 0 {
		return 0
	}
	return min(float64(after.Busy-before.Busy)/float64(elapsed*time.Duration(cpus)), 1)
}
