package fakesource

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/testkit"
)

func recvN(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, evString(testkit.Recv(t, w)))
	}
	return out
}

func TestWatchFromResourceVersion(t *testing.T) {
	cases := []struct {
		name string
		opts metav1.ListOptions
		want []string
	}{
		{name: "replays history after RV", opts: metav1.ListOptions{ResourceVersion: "3"},
			want: []string{"ADDED c@4", "MODIFIED a@5", "DELETED b@6"}},
		{name: "from current RV", opts: metav1.ListOptions{ResourceVersion: "6"}, want: nil},
		{name: "RV empty starts with current state", opts: metav1.ListOptions{},
			want: []string{"ADDED a@5", "ADDED c@4"}},
		{name: "RV 0 starts with current state", opts: metav1.ListOptions{ResourceVersion: "0"},
			want: []string{"ADDED a@5", "ADDED c@4"}},
		{name: "label selector turns updates into add and delete", opts: metav1.ListOptions{ResourceVersion: "1", LabelSelector: "v=2"},
			want: []string{"ADDED a@5"}},
		{name: "sendInitialEvents=false from now", opts: metav1.ListOptions{SendInitialEvents: new(bool), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true},
			want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := historySource(t, Options{})
			w := mustWatch(t, s.Endpoint(podGVK, ""), tc.opts)
			got := recvN(t, w, len(tc.want))
			// A marker change proves nothing else was queued before it.
			mustAdd(t, s, testkit.Pod("zz", "", testkit.Labels{"v": "2"}))
			if ev := evString(testkit.Recv(t, w)); ev != "ADDED zz@7" {
				t.Fatalf("after %v got %s, want the marker ADDED zz@7", got, ev)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	s := NewForTest(t, Options{})
	mustAdd(t, s, testkit.Pod("a", "", testkit.Labels{"app": "x"}))
	w := mustWatch(t, s.Endpoint(podGVK, ""), metav1.ListOptions{ResourceVersion: s.ResourceVersion(), LabelSelector: "app=x"})
	mustUpdate(t, s, testkit.Pod("a", "", testkit.Labels{"app": "y"}))
	mustUpdate(t, s, testkit.Pod("a", "", testkit.Labels{"app": "x"}))
	mustUpdate(t, s, testkit.Pod("a", "", testkit.Labels{"app": "x", "v": "1"}))
	mustDelete(t, s, testkit.Pod("a", ""))
	got := recvN(t, w, 4)
	want := []string{"DELETED a@3", "ADDED a@4", "MODIFIED a@5", "DELETED a@6"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestWatchExpired(t *testing.T) {
	for _, asError := range []bool{false, true} {
		t.Run("asError="+strconv.FormatBool(asError), func(t *testing.T) {
			s := historySource(t, Options{ExpiredAsError: asError})
			if err := s.Compact("5"); err != nil {
				t.Fatal(err)
			}
			ep := s.Endpoint(podGVK, "")
			w, err := ep.Watch(metav1.ListOptions{ResourceVersion: "4"})
			if asError {
				if !apierrors.IsResourceExpired(err) {
					t.Fatalf("Watch from compacted RV: %v, want 410 Expired", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			defer w.Stop()
			ev := testkit.Recv(t, w)
			if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
				t.Fatalf("event %s %#v, want an Expired ERROR", ev.Type, ev.Object)
			}
			if st := ev.Object.(*metav1.Status); st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
				t.Fatalf("status %+v, want 410 Expired", st)
			}
			recvClosed(t, w)
			// The compaction RV itself is still watchable.
			w2 := mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "5"})
			if got := evString(testkit.Recv(t, w2)); got != "DELETED b@6" {
				t.Fatalf("watch from the compaction RV: %s", got)
			}
		})
	}
}

func TestWatchTooLargeAndInvalid(t *testing.T) {
	s := historySource(t, Options{})
	ep := s.Endpoint(podGVK, "")
	if _, err := ep.Watch(metav1.ListOptions{ResourceVersion: "60"}); !isTooLarge(err) {
		t.Fatalf("watch ahead: %v, want TooLargeResourceVersion", err)
	}
	if _, err := ep.Watch(metav1.ListOptions{ResourceVersion: "60", SendInitialEvents: ptrTrue(), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}); !isTooLarge(err) {
		t.Fatalf("watch-list ahead: %v, want TooLargeResourceVersion", err)
	}
	if _, err := ep.Watch(metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); !apierrors.IsInvalid(err) {
		t.Fatalf("watch with match and no sendInitialEvents: %v, want 422", err)
	}
	if _, err := ep.Watch(metav1.ListOptions{SendInitialEvents: ptrTrue()}); !apierrors.IsInvalid(err) {
		t.Fatalf("sendInitialEvents without match: %v, want 422", err)
	}
	if st := s.Stats(); st.Watches != 4 || st.WatchLists != 2 || st.OpenWatches != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func watchListOptions(rv string) metav1.ListOptions {
	return metav1.ListOptions{ResourceVersion: rv, SendInitialEvents: ptrTrue(),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
}

func TestWatchList(t *testing.T) {
	s := historySource(t, Options{})
	if err := s.Compact("6"); err != nil {
		t.Fatal(err)
	}
	ep := s.Endpoint(podGVK, "")
	// An RV older than compaction is fine: the state is not older than it.
	w := mustWatch(t, ep, watchListOptions("3"))
	got := recvN(t, w, 2)
	if want := []string{"ADDED a@5", "ADDED c@4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("initial events = %v, want %v", got, want)
	}
	ev := testkit.Recv(t, w)
	acc, _ := meta.Accessor(ev.Object)
	if ev.Type != watch.Bookmark || acc.GetResourceVersion() != "6" || acc.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("end of initial events = %s %v, want an annotated bookmark at 6", ev.Type, acc)
	}
	if _, ok := ev.Object.(*corev1.Pod); !ok {
		t.Fatalf("bookmark object %T, want *v1.Pod", ev.Object)
	}
	mustAdd(t, s, testkit.Pod("d", ""))
	if got := evString(testkit.Recv(t, w)); got != "ADDED d@7" {
		t.Fatalf("live event %s", got)
	}
	if watchlist.DoesClientNotSupportWatchListSemantics(ep) {
		t.Fatalf("supported mode reports the client does not support WatchList")
	}
}

func TestWatchListModes(t *testing.T) {
	t.Run("rejected", func(t *testing.T) {
		s := historySource(t, Options{WatchList: WatchListRejected})
		_, err := s.Endpoint(podGVK, "").Watch(watchListOptions(""))
		if !apierrors.IsInvalid(err) {
			t.Fatalf("watch-list on a server with the gate off: %v, want 422", err)
		}
	})
	t.Run("ignored", func(t *testing.T) {
		s := historySource(t, Options{WatchList: WatchListIgnored})
		ep := s.Endpoint(podGVK, "")
		w := mustWatch(t, ep, watchListOptions(""))
		got := recvN(t, w, 2)
		if want := []string{"ADDED a@5", "ADDED c@4"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("legacy initial events = %v, want %v", got, want)
		}
		if n := s.SendBookmark(); n != 1 {
			t.Fatalf("SendBookmark asked %d watches, want 1", n)
		}
		ev := testkit.Recv(t, w)
		acc, _ := meta.Accessor(ev.Object)
		if ev.Type != watch.Bookmark || acc.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "" {
			t.Fatalf("got %s with annotations %v, want a plain bookmark", ev.Type, acc.GetAnnotations())
		}
		// From an RV the request is a legacy watch from that RV.
		w2 := mustWatch(t, ep, watchListOptions("5"))
		if got := evString(testkit.Recv(t, w2)); got != "DELETED b@6" {
			t.Fatalf("legacy watch from RV: %s", got)
		}
	})
	t.Run("client unsupported", func(t *testing.T) {
		s := historySource(t, Options{})
		ep := s.Endpoint(podGVK, "")
		s.SetWatchListMode(WatchListClientUnsupported)
		if !watchlist.DoesClientNotSupportWatchListSemantics(ep) {
			t.Fatalf("client-go does not see the unsupported marker")
		}
	})
}

func TestBookmarks(t *testing.T) {
	s := historySource(t, Options{})
	ep := s.Endpoint(podGVK, "")
	with := mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "4", AllowWatchBookmarks: true})
	without := mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "4"})
	if err := s.WaitFor(ctxTimeout(t), func(st Stats) bool { return st.OpenWatches == 2 }); err != nil {
		t.Fatal(err)
	}
	if n := s.SendBookmark(); n != 1 {
		t.Fatalf("SendBookmark asked %d watches, want 1", n)
	}
	// A change of another kind moves the RV without an event for pods.
	mustAdd(t, s, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}})
	s.SendBookmark()
	// The bookmark waits for the events before it (the watch is blocked
	// sending the first one), and both requests merge into one at the
	// current RV.
	got := recvN(t, with, 3)
	if want := []string{"MODIFIED a@5", "DELETED b@6", "BOOKMARK @7"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events with bookmarks = %v, want %v", got, want)
	}
	mustAdd(t, s, testkit.Pod("m", ""))
	if got := evString(testkit.Recv(t, with)); got != "ADDED m@8" {
		t.Fatalf("after bookmarks got %s", got)
	}
	if got := recvN(t, without, 3); !reflect.DeepEqual(got, []string{"MODIFIED a@5", "DELETED b@6", "ADDED m@8"}) {
		t.Fatalf("watch without bookmarks = %v", got)
	}
}

func TestPeriodicBookmarksAndTimeout(t *testing.T) {
	clk := newNotifyClock()
	s := historySource(t, Options{Clock: clk, BookmarkInterval: time.Minute})
	timeout := int64(300)
	w, err := s.Endpoint(podGVK, "").Watch(metav1.ListOptions{ResourceVersion: "6", AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	clk.waitCreated(t, 3) // the timeout and pre-timeout timers, the bookmark ticker
	clk.Step(time.Minute)
	if got := evString(testkit.Recv(t, w)); got != "BOOKMARK @6" {
		t.Fatalf("periodic bookmark = %s", got)
	}
	clk.Step(4 * time.Minute)
	// The ticker may fire once more before the timeout is noticed; then the
	// watch must close.
	deadline := time.After(testkit.Timeout())
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev.Type != watch.Bookmark {
				t.Fatalf("unexpected %s before timeout", evString(ev))
			}
		case <-deadline:
			t.Fatalf("watch not closed %v after its timeout passed", testkit.Timeout())
		}
	}
}

// TestPreTimeoutBookmark: as kube-apiserver's watch cache, the source
// sends a watch that allows bookmarks a bookmark at its current RV 2s
// before the watch's timeout, after the events before it; none for a
// timeout under 3s (that moment has passed), without bookmarks allowed,
// or without the watch cache.
func TestPreTimeoutBookmark(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      Options
		timeout   int64
		bookmarks bool
		want      bool
	}{
		{"3s", Options{}, 3, true, true},
		{"10s", Options{}, 10, true, true},
		{"2s", Options{}, 2, true, false},
		{"bookmarks not allowed", Options{}, 3, false, false},
		{"no watch cache", Options{DisableWatchCache: true}, 3, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newNotifyClock()
			tc.opts.Clock = clk
			s := historySource(t, tc.opts)
			w, err := s.Endpoint(podGVK, "").Watch(metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: tc.bookmarks, TimeoutSeconds: &tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if got := evString(testkit.Recv(t, w)); !strings.HasSuffix(got, "@6") {
				t.Fatalf("first event %s, want the change at 6", got)
			}
			timers := 1
			if tc.want {
				timers = 2
			}
			clk.waitCreated(t, timers)
			clk.Step(time.Duration(tc.timeout)*time.Second - 2*time.Second)
			if !tc.want {
				clk.Step(2 * time.Second) // the timeout
				if ev, ok := <-w.ResultChan(); ok {
					t.Fatalf("got %s, want the watch closed at its timeout without a bookmark", evString(ev))
				}
				return
			}
			if got := evString(testkit.Recv(t, w)); got != "BOOKMARK @6" {
				t.Fatalf("pre-timeout event %s, want BOOKMARK @6", got)
			}
		})
	}
}

// notifyClock is a fake clock that reports each timer and ticker it
// creates, so a test can step it once the code under test is waiting.
type notifyClock struct {
	*testingclock.FakeClock
	created chan time.Duration
}

func newNotifyClock() *notifyClock {
	return &notifyClock{FakeClock: testingclock.NewFakeClock(time.Unix(1000, 0)), created: make(chan time.Duration, 16)}
}

func (c *notifyClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.created <- d
	return t
}

func (c *notifyClock) NewTicker(d time.Duration) clock.Ticker {
	t := c.FakeClock.NewTicker(d)
	c.created <- d
	return t
}

// waitCreated waits until n timers or tickers were created.
func (c *notifyClock) waitCreated(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-c.created:
		case <-time.After(testkit.Timeout()):
			t.Fatalf("no timer created within %v", testkit.Timeout())
		}
	}
}

func TestWatchFaults(t *testing.T) {
	cases := []struct {
		name  string
		fault Fault
		check func(t *testing.T, w watch.Interface)
	}{
		{name: "close after 2 events", fault: Fault{AfterEvents: 2, End: EndClose}, check: func(t *testing.T, w watch.Interface) {
			recvN(t, w, 2)
			recvClosed(t, w)
		}},
		{name: "decode error after 1 event", fault: Fault{AfterEvents: 1, End: EndDecodeError}, check: func(t *testing.T, w watch.Interface) {
			recvN(t, w, 1)
			ev := testkit.Recv(t, w)
			err := apierrors.FromObject(ev.Object)
			if ev.Type != watch.Error || !apierrors.IsInternalError(err) || !apierrors.HasStatusCause(err, "ClientWatchDecoding") {
				t.Fatalf("got %s %v, want a decoding ERROR", ev.Type, err)
			}
			recvClosed(t, w)
		}},
		{name: "expired at once", fault: Fault{End: EndExpired}, check: func(t *testing.T, w watch.Interface) {
			ev := testkit.Recv(t, w)
			if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
				t.Fatalf("got %s, want an Expired ERROR", ev.Type)
			}
			recvClosed(t, w)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := historySource(t, Options{})
			s.FailWatches(1, tc.fault)
			w, err := s.Endpoint(podGVK, "").Watch(metav1.ListOptions{ResourceVersion: "1"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			tc.check(t, w)
			// The fault is used up: the next watch replays all history.
			w2 := mustWatch(t, s.Endpoint(podGVK, ""), metav1.ListOptions{ResourceVersion: "1"})
			if got := recvN(t, w2, 5); got[4] != "DELETED b@6" {
				t.Fatalf("next watch = %v", got)
			}
		})
	}
	t.Run("request errors", func(t *testing.T) {
		s := historySource(t, Options{})
		s.FailWatches(1, Fault{Err: TooManyRequests(3)})
		s.FailWatches(1, Fault{Err: ConnectionRefused()})
		ep := s.Endpoint(podGVK, "")
		if _, err := ep.Watch(metav1.ListOptions{}); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("first watch: %v", err)
		}
		if _, err := ep.Watch(metav1.ListOptions{}); !isConnRefused(err) {
			t.Fatalf("second watch: %v", err)
		}
		mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "6"})
	})
}

func TestRestart(t *testing.T) {
	s := historySource(t, Options{})
	ep := s.Endpoint(podGVK, "")
	w := mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "6"})
	// A watch blocked sending history is cut off too: the connection drops.
	blocked := mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "1"})
	s.Restart()
	recvClosed(t, w)
	recvClosed(t, blocked)
	w2 := mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "5"})
	ev := testkit.Recv(t, w2)
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Fatalf("watch from before the restart: %s, want Expired", ev.Type)
	}
	w3 := mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "6"})
	mustAdd(t, s, testkit.Pod("x", ""))
	if got := evString(testkit.Recv(t, w3)); got != "ADDED x@7" {
		t.Fatalf("watch from the restart RV: %s", got)
	}
	if got := s.CompactedResourceVersion(); got != "6" {
		t.Fatalf("compacted RV after restart = %s, want 6", got)
	}
}

func TestOpenWatchSurvivesCompaction(t *testing.T) {
	s := historySource(t, Options{})
	w := mustWatch(t, s.Endpoint(podGVK, ""), metav1.ListOptions{ResourceVersion: "1"})
	if err := s.Compact("6"); err != nil {
		t.Fatal(err)
	}
	got := recvN(t, w, 5)
	if got[0] != "ADDED a@2" || got[4] != "DELETED b@6" {
		t.Fatalf("events after compaction = %v", got)
	}
}

func TestWatchEndsOnStopAndContext(t *testing.T) {
	s := historySource(t, Options{})
	ep := s.Endpoint(podGVK, "")
	ctx, cancel := context.WithCancel(context.Background())
	w, err := ep.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "6"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	recvClosed(t, w)
	w.Stop()
	// Stop while the watch is blocked sending an event.
	w2, err := ep.Watch(metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	w2.Stop()
	w2.Stop()
	if err := s.WaitFor(ctxTimeout(t), func(st Stats) bool { return st.OpenWatches == 0 }); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := ep.WatchWithContext(cancelled, metav1.ListOptions{}); err == nil {
		t.Fatalf("watch with a cancelled context succeeded")
	}
}

// TestConcurrentWritersAndWatchers checks, under the race detector, that
// every watcher sees every change exactly once, in RV order.
func TestConcurrentWritersAndWatchers(t *testing.T) {
	s := NewForTest(t, Options{})
	ep := s.Endpoint(podGVK, "")
	const writers, perWriter, watchers = 4, 50, 3
	var ws []watch.Interface
	for range watchers {
		ws = append(ws, mustWatch(t, ep, metav1.ListOptions{ResourceVersion: "1"}))
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perWriter {
				p := testkit.Pod("w"+strconv.Itoa(i)+"-"+strconv.Itoa(j), "")
				if _, err := s.Add(p); err != nil {
					t.Error(err)
					return
				}
				if j%2 == 0 {
					if _, err := s.Delete(p); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	total := writers * (perWriter + perWriter/2)
	for _, w := range ws {
		last := int64(1)
		for range total {
			rv, _ := strconv.ParseInt(rvOf(t, testkit.Recv(t, w).Object), 10, 64)
			if rv != last+1 {
				t.Fatalf("event RV %d after %d: not contiguous", rv, last)
			}
			last = rv
		}
	}
	if got := len(s.Objects(podGVK)); got != writers*perWriter/2 {
		t.Fatalf("objects = %d, want %d", got, writers*perWriter/2)
	}
}
