package reflector

// This file ports client-go's tools/cache/reflector_watchlist_test.go at
// v0.36.3: when WatchList is used, the resourceVersion it syncs at, and
// TestWatchList's scenarios. Adapted: client-go's WatchListClient feature
// gate is our Options.UseWatchList; each watch request is answered from a
// script (an error, or events buffered in a watch.FakeWatcher, closed
// after them when the scenario stops the watcher), and the test ends where
// client-go's ListAndWatch would return. Intended differences, in the
// package doc and on ErrWatchListUnsupported:
//
//   - a MODIFIED or DELETED event, or a bookmark without the
//     initial-events-end annotation, before the end of the initial events
//     is how a server that ignores sendInitialEvents answers (a legacy
//     watch): ours relists with LIST from then on, where client-go applies
//     the events or keeps waiting for the annotated bookmark;
//   - a stream that closes before its initial events are complete is
//     followed by a LIST, where client-go sends the WatchList request
//     again at once.
//
// TestInitialEventsEndBookmarkTicker is not ported: ours has no warning
// ticker while a stream is incomplete.

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
)

func TestNewReflectorWithDisablementWatchList(t *testing.T) {
	supports := newLW(nil, nil)
	doesNot := newLW(nil, nil)
	doesNot.watchListOff = true
	scenarios := []struct {
		name   string
		policy WatchListPolicy
		lw     cache.ListerWatcherWithContext
		want   bool
	}{
		{"WatchList off, client supports WatchList semantics", WatchListOff, supports, false},
		{"WatchList auto, client supports WatchList semantics", WatchListAuto, supports, true},
		{"WatchList auto, client doesn't support the WatchList semantics", WatchListAuto, doesNot, false},
		{"WatchList auto, client doesn't expose IsWatchListSemanticsUnSupported", WatchListAuto, &cache.ListWatch{}, true},
	}
	for _, scenario := range scenarios {
		t.Run(scenario.name, func(t *testing.T) {
			r := newCG(t, scenario.lw, newRecorder(), nil, Options{UseWatchList: scenario.policy})
			if got := r.useWatchList(); got != scenario.want {
				t.Fatalf("got: %v, want: %v", got, scenario.want)
			}
		})
	}
}

// wlAnswer answers one watch request: err, or a watch that delivers
// events (buffered) and then stays open, or closes when closed is set.
type wlAnswer struct {
	err    error
	events []watch.Event
	closed bool
}

// scriptedWatches answers the watch requests of a cgLW from answers; a
// request past them cancels the test's context (client-go's
// ListAndWatch returns there). last is the watcher of the last answer.
type scriptedWatches struct {
	answers []wlAnswer
	cancel  context.CancelFunc

	mu   sync.Mutex
	n    int
	last *watch.FakeWatcher
}

func (s *scriptedWatches) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= len(s.answers) {
		s.cancel()
		return nil, context.Canceled
	}
	a := s.answers[s.n]
	s.n++
	if a.err != nil {
		return nil, a.err
	}
	w := watch.NewFakeWithChanSize(len(a.events), false)
	for _, e := range a.events {
		w.Action(e.Type, e.Object)
	}
	if a.closed {
		w.Stop()
	}
	s.last = w
	return w, nil
}

// drained reports whether the last watcher's events were all received.
func (s *scriptedWatches) drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n == len(s.answers) && s.last != nil && len(s.last.ResultChan()) == 0
}

func TestWatchListResourceVersion(t *testing.T) {
	scenarios := []struct {
		name                    string
		watchEvents             []watch.Event
		expectedResourceVersion string
	}{
		{
			name:                    "empty resource version",
			expectedResourceVersion: "",
		},
		{
			name:                    "empty resource version without bookmark event",
			watchEvents:             []watch.Event{{Type: watch.Added, Object: testkit.Pod("p1", "1")}},
			expectedResourceVersion: "",
		},
		{
			name: "non empty resource version with bookmark event and initial events annotation",
			watchEvents: []watch.Event{
				{Type: watch.Added, Object: testkit.Pod("p1", "1")},
				{Type: watch.Bookmark, Object: endBookmark("2")},
			},
			expectedResourceVersion: "2",
		},
	}
	for _, scenario := range scenarios {
		t.Run(scenario.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			sw := &scriptedWatches{answers: []wlAnswer{{events: scenario.watchEvents}}, cancel: cancel}
			lw := newLW(nil, sw.watch)
			s := newRecorder()
			r := newCG(t, lw, s, nil, Options{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.Run(ctx)
			}()
			if scenario.expectedResourceVersion != "" {
				s.waitCall(t, "EndReplace "+scenario.expectedResourceVersion)
			} else {
				waitUntil(t, "the stream to be read", sw.drained)
			}
			cancel()
			<-done
			if got := r.LastSyncResourceVersion(); got != scenario.expectedResourceVersion {
				t.Errorf("LastSyncResourceVersion %q, want %q", got, scenario.expectedResourceVersion)
			}
		})
	}
}

// waitUntil polls cond until it holds, failing the test after testkit.Timeout().
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, testkit.Timeout(), true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestWatchList(t *testing.T) {
	added := func(name, rv string) watch.Event {
		return watch.Event{Type: watch.Added, Object: testkit.Pod(name, rv)}
	}
	bookmark := func(rv string) watch.Event { return watch.Event{Type: watch.Bookmark, Object: endBookmark(rv)} }
	errorEvent := func(err apierrors.APIStatus) watch.Event {
		st := err.Status()
		return watch.Event{Type: watch.Error, Object: &st}
	}
	tooMany := apierrors.NewTooManyRequests("busy, check again later", 1)
	scenarios := []struct {
		name         string
		watchListOff bool
		watches      []wlAnswer
		list         *corev1.PodList
		// endCall is the Sink call after which the test ends; drain ends
		// it once the last watch's events are read; else the first watch
		// request past watches ends it.
		endCall     string
		drain       bool
		requests    []request
		store       map[string]string
		lastRV      string
		waits       []time.Duration
		handledErrs int
	}{
		{
			name:     "the reflector won't be synced if the bookmark event has not been received",
			watches:  []wlAnswer{{events: []watch.Event{added("p1", "1")}}},
			drain:    true,
			requests: []request{watchListReq("")},
			store:    map[string]string{},
		},
		{
			name:         "the reflector uses the old LIST/WATCH semantics if the UseWatchList is turned off",
			watchListOff: true,
			list:         mkList("1", testkit.Pod("p1", "1")),
			requests:     []request{listReq("0", 500, "", ""), watchReq("1")},
			store:        map[string]string{"p1": "1"},
			lastRV:       "1",
		},
		{
			name:     "returning any other error than apierrors.NewInvalid forces fallback",
			watches:  []wlAnswer{{err: fmt.Errorf("dummy error")}, {events: []watch.Event{added("p2", "2")}}},
			list:     mkList("1", testkit.Pod("p1", "1")),
			endCall:  "Add p2@2",
			requests: []request{watchListReq(""), listReq("0", 500, "", ""), watchReq("1")},
			store:    map[string]string{"p1": "1", "p2": "2"},
			lastRV:   "2",
		},
		{
			name:     "the reflector can fall back to old LIST/WATCH semantics when a server doesn't support streaming",
			watches:  []wlAnswer{{err: apierrors.NewInvalid(schema.GroupKind{}, "streaming is not allowed", nil)}, {events: []watch.Event{added("p2", "2")}}},
			list:     mkList("1", testkit.Pod("p1", "1")),
			endCall:  "Add p2@2",
			requests: []request{watchListReq(""), listReq("0", 500, "", ""), watchReq("1")},
			store:    map[string]string{"p1": "1", "p2": "2"},
			lastRV:   "2",
		},
		{
			name:     "prove that the reflector is synced after receiving a bookmark event",
			watches:  []wlAnswer{{events: []watch.Event{added("p1", "1"), added("p2", "2"), bookmark("2")}}},
			endCall:  "EndReplace 2",
			requests: []request{watchListReq("")},
			store:    map[string]string{"p1": "1", "p2": "2"},
			lastRV:   "2",
		},
		{
			// client-go applies the MODIFIED and DELETED events to the
			// streamed state; ours takes them for a legacy watch and lists.
			name: "Updates and Deletes during streaming fall back to LIST",
			watches: []wlAnswer{{events: []watch.Event{
				added("p1", "1"), added("p2", "2"),
				{Type: watch.Modified, Object: testkit.Pod("p1", "3")},
				added("p3", "4"),
				{Type: watch.Deleted, Object: testkit.Pod("p3", "5")},
				bookmark("5"),
			}}},
			list:     mkList("5", testkit.Pod("p2", "2"), testkit.Pod("p1", "3")),
			requests: []request{watchListReq(""), listReq("0", 500, "", ""), watchReq("5")},
			store:    map[string]string{"p1": "3", "p2": "2"},
			lastRV:   "5",
		},
		{
			name: "checks if the reflector retries 429",
			watches: []wlAnswer{
				{err: tooMany}, {err: tooMany},
				{events: []watch.Event{added("p1", "1"), bookmark("2")}},
			},
			endCall:  "EndReplace 2",
			requests: []request{watchListReq(""), watchListReq(""), watchListReq("")},
			store:    map[string]string{"p1": "1"},
			lastRV:   "2",
			// At least the Retry-After of 1s, then the backoff.
			waits: []time.Duration{time.Second, 1600 * time.Millisecond},
		},
		{
			// Ours only: a 429 as an ERROR event of the stream.
			name: "a 429 in the stream is retried too",
			watches: []wlAnswer{
				{events: []watch.Event{added("p1", "1"), errorEvent(tooMany)}},
				{events: []watch.Event{added("p1", "1"), bookmark("2")}},
			},
			endCall:  "EndReplace 2",
			requests: []request{watchListReq(""), watchListReq("")},
			store:    map[string]string{"p1": "1"},
			lastRV:   "2",
			waits:    []time.Duration{time.Second},
		},
		{
			name: "a refused connection is retried too",
			watches: []wlAnswer{
				{err: syscall.ECONNREFUSED},
				{events: []watch.Event{added("p1", "1"), bookmark("2")}},
			},
			endCall:  "EndReplace 2",
			requests: []request{watchListReq(""), watchListReq("")},
			store:    map[string]string{"p1": "1"},
			lastRV:   "2",
			waits:    []time.Duration{800 * time.Millisecond},
		},
		{
			// client-go sends a second WatchList request; ours lists.
			name:     "stopping a watcher before sync results in a LIST",
			watches:  []wlAnswer{{events: []watch.Event{added("p1", "1")}, closed: true}},
			list:     mkList("1", testkit.Pod("p1", "1")),
			requests: []request{watchListReq(""), listReq("0", 500, "", ""), watchReq("1")},
			store:    map[string]string{"p1": "1"},
			lastRV:   "1",
		},
		{
			name: "stopping a watcher after synchronization results in creating a new watch request",
			watches: []wlAnswer{
				{events: []watch.Event{added("p1", "1"), added("p2", "2"), bookmark("2"), added("p3", "3")}, closed: true},
				{events: []watch.Event{added("p4", "4")}},
			},
			endCall:  "Add p4@4",
			requests: []request{watchListReq(""), watchReq("3")},
			store:    map[string]string{"p1": "1", "p2": "2", "p3": "3", "p4": "4"},
			lastRV:   "4",
		},
		{
			// client-go's ListAndWatch returns the 410; ours relists, with
			// WatchList from the last resourceVersion.
			name: "expiring an established watcher results in a relist",
			watches: []wlAnswer{
				{events: []watch.Event{added("p1", "1"), bookmark("2"), added("p3", "3")}, closed: true},
				{err: apierrors.NewResourceExpired("rv already expired")},
			},
			requests:    []request{watchListReq(""), watchReq("3"), watchListReq("3")},
			store:       map[string]string{"p1": "1", "p3": "3"},
			lastRV:      "3",
			handledErrs: 1,
			// A 410 soon after the last relist backs off before the
			// next (kubernetes/kubernetes#133810).
			waits: []time.Duration{800 * time.Millisecond},
		},
		{
			// client-go keeps waiting for an annotated bookmark; ours
			// takes the stream for a legacy watch and lists.
			name:     "prove that the reflector is checking the value of the initialEventsEnd annotation",
			watches:  []wlAnswer{{events: []watch.Event{added("p1", "1"), added("p2", "2"), {Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "false"}}}}}}},
			list:     mkList("2", testkit.Pod("p1", "1"), testkit.Pod("p2", "2")),
			requests: []request{watchListReq(""), listReq("0", 500, "", ""), watchReq("2")},
			store:    map[string]string{"p1": "1", "p2": "2"},
			lastRV:   "2",
		},
	}
	for _, scenario := range scenarios {
		t.Run(scenario.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			sw := &scriptedWatches{answers: scenario.watches, cancel: cancel}
			lw := newLW(func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				if scenario.list == nil {
					return nil, fmt.Errorf("not implemented")
				}
				return scenario.list, nil
			}, sw.watch)
			lw.watchListOff = scenario.watchListOff
			s := newRecorder()
			clk := newInstantClock()
			var mu sync.Mutex
			var handled []error
			r := newCG(t, lw, s, clk, Options{WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, err)
			}})
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.Run(ctx)
			}()
			switch {
			case scenario.endCall != "":
				s.waitCall(t, scenario.endCall)
				cancel()
			case scenario.drain:
				waitUntil(t, "the stream to be read", sw.drained)
				cancel()
			}
			select {
			case <-done:
			case <-time.After(testkit.Timeout()):
				cancel()
				<-done
				t.Fatalf("Run did not end within %v", testkit.Timeout())
			}

			checkRequests(t, lw, scenario.requests)
			if got := s.itemsByName(); !equalMaps(got, scenario.store) {
				t.Errorf("store %v, want %v", got, scenario.store)
			}
			if got := r.LastSyncResourceVersion(); got != scenario.lastRV {
				t.Errorf("LastSyncResourceVersion %q, want %q", got, scenario.lastRV)
			}
			if got := clk.recorded(); fmt.Sprint(got) != fmt.Sprint(scenario.waits) && !(len(got) == 0 && len(scenario.waits) == 0) {
				t.Errorf("waits %v, want %v", got, scenario.waits)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(handled) != scenario.handledErrs {
				t.Errorf("WatchErrorHandler got %v, want %d errors", handled, scenario.handledErrs)
			}
			s.checkProtocol(t)
		})
	}
}
