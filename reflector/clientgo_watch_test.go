package reflector

// This file ports the watch tests of client-go's
// tools/cache/reflector_test.go at v0.36.3: closing and stopping watches,
// the watch handler, resourceVersion updates and watch timeouts. Adapted
// (see clientgo_helpers_test.go): client-go's handleWatch is our consume
// and its watch our watch; a watch that closes at once is reported as a
// cache.VeryShortWatchError to the WatchErrorHandler by watch, not
// returned by consume; client-go's store is the recorder's model and its
// UpdateResourceVersion our Sink's calls.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
)

// TestCloseWatchChannelOnError checks that a watch whose ERROR event
// ends it is stopped.
func TestCloseWatchChannelOnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bar"}}
	fw := watch.NewFake()
	var watches sync.Mutex
	n := 0
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) { return mkList("1"), nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			watches.Lock()
			defer watches.Unlock()
			if n++; n == 1 {
				return fw, nil
			}
			return watch.NewFake(), nil // the relist's watch stays open
		})
	r := newCG(t, lw, newRecorder(), nil, Options{UseWatchList: WatchListOff})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	fw.Error(p)
	select {
	case _, ok := <-fw.ResultChan():
		if ok {
			t.Errorf("Watch channel left open after an error")
		}
	case <-time.After(testkit.Timeout()):
		t.Errorf("the watch was not stopped within %v", testkit.Timeout())
	}
	cancel()
	<-done
}

// TestRunUntil checks that cancelling Run's context stops the open watch
// and ends Run.
func TestRunUntil(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fw := watch.NewFake()
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) { return mkList("1"), nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil })
	r := newCG(t, lw, newRecorder(), nil, Options{UseWatchList: WatchListOff})
	doneCh := make(chan struct{})
	go func() {
		defer close(doneCh)
		r.Run(ctx)
	}()
	// Synchronously add a pod into the watch channel so we know Run is in
	// the watch handler.
	fw.Add(testkit.Pod("bar", "2"))

	cancel()
	resultCh := fw.ResultChan()
	for {
		select {
		case <-doneCh:
			if resultCh == nil {
				return // both closed
			}
			doneCh = nil
		case _, ok := <-resultCh:
			if ok {
				t.Fatalf("Watch channel left open after stopping the watch")
			}
			if doneCh == nil {
				return // both closed
			}
			resultCh = nil
		case <-time.After(testkit.Timeout()):
			t.Fatalf("the cancellation is at least %s late", testkit.Timeout())
		}
	}
}

// TestReflectorWatchStoppedBefore ensures that neither List nor Watch are
// called if the context is done before Run or watch is called.
func TestReflectorWatchStoppedBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			t.Error("ListFunc called unexpectedly")
			return nil, errUnscripted
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			t.Error("WatchFunc called unexpectedly")
			return nil, errUnscripted
		})
	r := newCG(t, lw, newRecorder(), nil, Options{})
	r.Run(ctx)

	var cold catchUp
	if err := r.watch(ctx, nil, &cold); !errors.Is(err, context.Canceled) {
		t.Errorf("watch returned %v, want the context's error", err)
	}
}

// TestReflectorWatchStoppedAfter ensures that watch always stops the
// watcher when the context is done after the watch has started.
func TestReflectorWatchStoppedAfter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var watchers []*watch.FakeWatcher
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			t.Error("ListFunc called unexpectedly")
			return nil, errUnscripted
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			// The context ends once watching has started.
			cancel()
			w := watch.NewFake()
			watchers = append(watchers, w)
			return w, nil
		})
	r := newCG(t, lw, newRecorder(), nil, Options{})
	var cold catchUp
	if err := r.watch(ctx, nil, &cold); !errors.Is(err, context.Canceled) {
		t.Errorf("watch returned %v, want the context's error", err)
	}
	if len(watchers) != 1 || !watchers[0].IsStopped() {
		t.Errorf("%d watchers, want 1, stopped", len(watchers))
	}
}

// mockWatcher records the calls of consume on a watch.MockWatcher.
func mockWatcher(resultCh func() chan watch.Event, onStop func(chan watch.Event)) (*watch.MockWatcher, *[]string) {
	var calls []string
	var ch chan watch.Event
	return &watch.MockWatcher{
		StopFunc: func() {
			calls = append(calls, "Stop")
			if onStop != nil {
				onStop(ch)
			}
		},
		ResultChanFunc: func() <-chan watch.Event {
			calls = append(calls, "ResultChan")
			ch = resultCh()
			return ch
		},
	}, &calls
}

// TestReflectorHandleWatchStopped ensures that consume returns when the
// context is done before or after it was called, and calls ResultChan and
// Stop once each.
func TestReflectorHandleWatchStopped(t *testing.T) {
	for _, before := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		if before {
			cancel()
		}
		fw, calls := mockWatcher(func() chan watch.Event {
			if !before {
				// The context ends after watching has started.
				cancel()
			}
			return make(chan watch.Event)
		}, func(ch chan watch.Event) { close(ch) })
		r := newCG(t, newLW(nil, nil), newRecorder(), nil, Options{})
		var cold catchUp
		st, err := r.consume(ctx, fw, &cold, 0)
		if n := st.events; n != 0 || !errors.Is(err, context.Canceled) {
			t.Errorf("before=%v: consume = %d, %v; want 0 and the context's error", before, n, err)
		}
		if want := []string{"ResultChan", "Stop"}; !equalStrings(*calls, want) {
			t.Errorf("before=%v: calls %v, want %v", before, *calls, want)
		}
		cancel()
	}
}

// TestReflectorHandleWatchResultChanClosed ensures that a watch whose
// result channel is closed, before or after consume starts, ends it, is
// stopped, and is reported as a very short watch.
func TestReflectorHandleWatchResultChanClosed(t *testing.T) {
	for _, before := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		fw, calls := mockWatcher(func() chan watch.Event {
			ch := make(chan watch.Event)
			if before {
				close(ch)
			} else {
				// The producer closes it after watching has started.
				go close(ch)
			}
			return ch
		}, nil)
		var handled []error
		n := 0
		lw := newLW(nil, func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			if n++; n == 1 {
				return fw, nil
			}
			cancel()
			return nil, context.Canceled
		})
		r := newCG(t, lw, newRecorder(), nil, Options{
			WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) { handled = append(handled, err) },
		})
		var cold catchUp
		if err := r.watch(ctx, nil, &cold); !errors.Is(err, context.Canceled) {
			t.Errorf("before=%v: watch returned %v, want the context's error", before, err)
		}
		want := &cache.VeryShortWatchError{Name: r.Name()}
		if len(handled) != 1 || handled[0].Error() != want.Error() {
			t.Errorf("before=%v: handled %v, want [%v]", before, handled, want)
		}
		if want := []string{"ResultChan", "Stop"}; !equalStrings(*calls, want) {
			t.Errorf("before=%v: calls %v, want %v", before, *calls, want)
		}
		cancel()
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReflectorWatchHandler(t *testing.T) {
	s := newRecorder()
	s.items["ns/foo"] = "1"
	s.items["ns/bar"] = "2"
	r := newCG(t, newLW(nil, nil), s, nil, Options{})
	fw := watch.NewFake()
	go func() {
		fw.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rejected"}})
		fw.Delete(testkit.Pod("foo", ""))
		fw.Modify(testkit.Pod("bar", "55"))
		fw.Add(testkit.Pod("baz", "32"))
		// The producer is done: closing the result channel ends consume.
		fw.Stop()
	}()
	var cold catchUp
	st, err := r.consume(context.Background(), fw, &cold, 0)
	if n := st.events; err != nil || n != 3 {
		t.Fatalf("consume = %d, %v; want 3 events and a clean end", n, err)
	}
	// client-go's events are not in resourceVersion order (55 then 32) and
	// foo's delete has none: the recorder's protocol checks do not apply.
	want := map[string]string{"bar": "55", "baz": "32"}
	if got := s.itemsByName(); !equalMaps(got, want) {
		t.Errorf("store %v, want %v", got, want)
	}
	// LastSyncResourceVersion is the RV of the last event.
	if e, a := "32", r.LastSyncResourceVersion(); e != a {
		t.Errorf("expected %v, got %v", e, a)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestReflectorResourceVersionUpdate checks that every event's and
// bookmark's resourceVersion reaches the Sink, in order (client-go's
// ReflectorBookmarkStore.UpdateResourceVersion).
func TestReflectorResourceVersionUpdate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fw := watch.NewFake()
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) { return mkList("10"), nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil })
	lw.watchListOff = true
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{})
	makePod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	fw.Action(watch.Added, makePod("10"))
	fw.Action(watch.Modified, makePod("20"))
	fw.Action(watch.Bookmark, makePod("30"))
	fw.Action(watch.Deleted, makePod("40"))
	s.waitCall(t, "Delete p@40")
	cancel()
	<-done

	want := []string{"BeginReplace", "EndReplace 10", "Add p@10", "Update p@20", "Bookmark 30", "Delete p@40"}
	if got := s.snapshot(); !equalStrings(got, want) {
		t.Errorf("Sink calls %v, want %v", got, want)
	}
	s.checkProtocol(t)
	if e, a := "40", r.LastSyncResourceVersion(); e != a {
		t.Errorf("LastSyncResourceVersion %v, want %v", a, e)
	}
}

func TestWatchTimeout(t *testing.T) {
	testCases := []struct {
		name                      string
		minWatchTimeout           time.Duration
		expectedMinTimeoutSeconds int64
	}{
		{
			name:                      "no timeout",
			expectedMinTimeoutSeconds: 5 * 60,
		},
		{
			name:                      "small timeout not honored",
			minWatchTimeout:           time.Second,
			expectedMinTimeoutSeconds: 5 * 60,
		},
		{
			name:                      "30m timeout",
			minWatchTimeout:           30 * time.Minute,
			expectedMinTimeoutSeconds: 30 * 60,
		},
	}

	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var gotTimeoutSeconds int64
			lw := newLW(
				func(context.Context, metav1.ListOptions) (runtime.Object, error) { return mkList("10"), nil },
				func(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
					if options.TimeoutSeconds != nil {
						gotTimeoutSeconds = *options.TimeoutSeconds
					}
					// Stop once the reflector begins watching.
					cancel()
					return watch.NewFake(), nil
				})
			r := newCG(t, lw, newRecorder(), nil, Options{MinWatchTimeout: tc.minWatchTimeout, UseWatchList: WatchListOff})
			runToEnd(t, r, ctx, cancel)

			minExpected := tc.expectedMinTimeoutSeconds
			maxExpected := 2 * tc.expectedMinTimeoutSeconds
			if gotTimeoutSeconds < minExpected || gotTimeoutSeconds > maxExpected {
				t.Errorf("unexpected TimeoutSecond, got %v, expected in [%v, %v]", gotTimeoutSeconds, minExpected, maxExpected)
			}
		})
	}
}
