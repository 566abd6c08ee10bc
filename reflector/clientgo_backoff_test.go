package reflector

// This file ports the backoff and retry tests of client-go's
// tools/cache/reflector_test.go at v0.36.3: backoff on refused
// connections (default and custom), on 429 Too Many Requests, without a
// relist, and the retries of 500 Internal Server Error answers within
// MaxInternalErrorRetryDuration. Adapted: client-go injects a delay
// function and measures elapsed fake time; ours runs on instantClock,
// whose timers fire at once, and checks each wait asked for. Ours also
// waits at least a 429's Retry-After (client-go's watch path does not).

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// TestReflectorListAndWatchInitConnBackoff (and client-go's
// TestNewReflectorWithCustomBackoff): refused watch connections back off
// exponentially up to the cap, without relisting.
func TestReflectorListAndWatchInitConnBackoff(t *testing.T) {
	const maxBackoff = 50 * time.Millisecond
	jittered := &wait.Backoff{Duration: time.Millisecond, Cap: maxBackoff, Steps: 1000, Factor: 2.0, Jitter: 1.0}
	custom := &wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2.0, Jitter: 0, Steps: 100, Cap: 100 * time.Millisecond}
	def := DefaultBackoff()
	table := []struct {
		name         string
		backoff      *wait.Backoff
		numConnFails int
		// each wait is in [base, base*(1+jitter)], base growing by the
		// factor up to the cap.
	}{
		{"5 failures below the cap", jittered, 5},
		{"40 failures, flattened at the cap", jittered, 40},
		{"default backoff", &def, 2},
		{"custom backoff: 10+20+40+80+100ms", custom, 5},
	}
	for _, test := range table {
		t.Run(test.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			connFails := test.numConnFails
			lw := newLW(
				func(context.Context, metav1.ListOptions) (runtime.Object, error) { return mkList("1"), nil },
				func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					if connFails > 0 {
						connFails--
						return nil, syscall.ECONNREFUSED
					}
					cancel()
					return watch.NewFake(), nil
				})
			lw.watchListOff = true
			clk := newInstantClock()
			r := newCG(t, lw, newRecorder(), clk, Options{Backoff: test.backoff})
			runToEnd(t, r, ctx, cancel)

			waits := clk.recorded()
			if len(waits) != test.numConnFails {
				t.Fatalf("%d waits, want %d: %v", len(waits), test.numConnFails, waits)
			}
			base := test.backoff.Duration
			var total time.Duration
			for i, w := range waits {
				hi := base + time.Duration(float64(base)*test.backoff.Jitter)
				if w < base || w > hi {
					t.Errorf("wait %d = %v, want in [%v, %v]", i, w, base, hi)
				}
				total += w
				base = min(time.Duration(float64(base)*test.backoff.Factor), test.backoff.Cap)
			}
			if test.backoff == custom && total != 250*time.Millisecond {
				t.Errorf("waited %v in all, want 250ms", total)
			}
			if n := lw.count("list"); n != 1 {
				t.Errorf("%d lists, want 1: a refused watch is retried, not relisted", n)
			}
		})
	}
}

func TestBackoffOnTooManyRequests(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := apierrors.NewTooManyRequests("too many requests", 1)
	calls := 0
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) { return mkList("1"), nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			calls++
			switch calls {
			case 1:
				return nil, err
			case 2:
				w := watch.NewFakeWithChanSize(1, false)
				status := err.Status()
				w.Error(&status)
				return w, nil
			case 3:
				w := watch.NewFake()
				w.Stop()
				return w, nil
			}
			cancel()
			return nil, context.Canceled
		})
	lw.watchListOff = true
	clk := newInstantClock()
	r := newCG(t, lw, newRecorder(), clk, Options{})
	runToEnd(t, r, ctx, cancel)

	// Both 429s back off (at least their Retry-After of 1s), and so does
	// the watch that closed at once.
	want := []time.Duration{time.Second, 1600 * time.Millisecond, 3200 * time.Millisecond}
	if got := clk.recorded(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	if n := lw.count("list"); n != 1 {
		t.Errorf("%d lists, want 1", n)
	}
}

func TestNoRelistOnTooManyRequests(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := apierrors.NewTooManyRequests("too many requests", 1)
	watchCalls := 0
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) { return mkList("1"), nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			watchCalls++
			if watchCalls < 5 {
				return nil, err
			}
			cancel()
			return watch.NewFake(), nil
		})
	lw.watchListOff = true
	r := newCG(t, lw, newRecorder(), nil, Options{})
	runToEnd(t, r, ctx, cancel)

	if n := lw.count("list"); n != 1 {
		t.Errorf("unexpected list calls: %d", n)
	}
	if watchCalls != 5 {
		t.Errorf("unexpected watch calls: %d", watchCalls)
	}
}

// TestRetryInternalError counts the watches retried after 500 answers
// before the reflector relists. Ours also checks the window after that
// relist: once a window is exhausted the retries start over, as with
// client-go's RetryWithDeadline per ListAndWatch.
func TestRetryInternalError(t *testing.T) {
	testCases := []struct {
		name                string
		maxInternalDuration time.Duration
		rewindTime          int
		wantRetries         int
	}{
		{
			name:                "retries off",
			maxInternalDuration: time.Duration(0),
			wantRetries:         0,
		},
		{
			name:                "retries on, all calls fail",
			maxInternalDuration: time.Second * 30,
			wantRetries:         31,
		},
		{
			name:                "retries on, one call successful",
			maxInternalDuration: time.Second * 30,
			rewindTime:          10,
			wantRetries:         40,
		},
	}

	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			err := apierrors.NewInternalError(fmt.Errorf("etcdserver: no leader"))
			clk := newInstantClock()
			ctx, cancel := context.WithCancel(context.Background())
			var mu sync.Mutex
			lists := 0
			var counters [2]int // watches after the first and the second list
			lw := newLW(
				func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					mu.Lock()
					defer mu.Unlock()
					if lists++; lists == 3 {
						cancel()
						return nil, context.Canceled
					}
					return mkList("1"), nil
				},
				func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					mu.Lock()
					defer mu.Unlock()
					counters[lists-1]++
					if counters[lists-1] == tc.rewindTime {
						clk.Step(time.Minute)
					}
					clk.Step(time.Second)
					w := watch.NewFakeWithChanSize(1, false)
					status := err.Status()
					w.Error(&status)
					return w, nil
				})
			lw.watchListOff = true
			r := newCG(t, lw, newRecorder(), clk, Options{MaxInternalErrorRetryDuration: tc.maxInternalDuration})
			runToEnd(t, r, ctx, cancel)

			for i, c := range counters {
				if c-1 != tc.wantRetries {
					t.Errorf("after list %d: unexpected number of retries: %d, want %d", i+1, c-1, tc.wantRetries)
				}
			}
		})
	}
}
