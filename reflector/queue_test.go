package reflector

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// queueSink is a deltafifo.Queue used directly as the Sink, as the Sink
// documentation says it can be. onFirstPage runs once, before the first
// ReplacePage; ended is closed by the first EndReplace.
type queueSink struct {
	*deltafifo.Queue
	once        *sync.Once
	onFirstPage func()
	endOnce     *sync.Once
	ended       chan struct{}
}

func (s queueSink) ReplacePage(ctx context.Context, objs []interface{}) error {
	s.once.Do(s.onFirstPage)
	return s.Queue.ReplacePage(ctx, objs)
}

func (s queueSink) EndReplace(ctx context.Context, rv string) error {
	err := s.Queue.EndReplace(ctx, rv)
	s.endOnce.Do(func() { close(s.ended) })
	return err
}

// drainQueue closes q and describes every batch it held.
func drainQueue(t *testing.T, q *deltafifo.Queue) []string {
	t.Helper()
	q.Close()
	var got []string
	for {
		b, err := q.Pop(context.Background(), 100)
		if errors.Is(err, deltafifo.ErrClosed) {
			return got
		}
		if err != nil {
			t.Fatalf("Pop: %v", err)
		}
		d := b.Kind.String()
		for _, o := range b.Objects {
			acc, _ := meta.Accessor(o)
			d += " " + acc.GetName()
		}
		if b.Kind == deltafifo.KindReplaceEnd || b.Kind == deltafifo.KindDeltas {
			d += " " + b.ResourceVersion
		}
		got = append(got, d)
	}
}

// TestRestartedRelistWithQueueSink restarts a relist midway with a
// deltafifo.Queue as the Sink. The queue refuses a BeginReplace while a
// replace is open, so the reflector must abort the open replace before it
// begins the new one; otherwise the restart fails, backs off and lists
// again from scratch.
func TestRestartedRelistWithQueueSink(t *testing.T) {
	cases := []struct {
		name string
		opts fakesource.Options
		// fault runs once, before the first page reaches the queue.
		fault  func(t *testing.T, src *fakesource.Source)
		policy WatchListPolicy
		want   []string
	}{{
		name: "expired continue token",
		opts: fakesource.Options{DisableWatchCache: true},
		fault: func(t *testing.T, src *fakesource.Source) {
			if _, err := src.Add(testkit.Pod("d", "")); err != nil {
				t.Error(err)
			}
			if err := src.Compact(src.ResourceVersion()); err != nil {
				t.Error(err)
			}
		},
		policy: WatchListOff,
		// Nothing was popped before the restart: the aborted replace
		// vanished from the queue.
		want: []string{"ReplaceBegin", "ReplacePage a b", "ReplacePage c d", "ReplaceEnd 5"},
	}, {
		name: "server ignores WatchList",
		opts: fakesource.Options{WatchList: fakesource.WatchListIgnored},
		// The legacy watch's plain bookmark reveals that the server
		// ignored sendInitialEvents: the relist restarts with LIST.
		fault: func(t *testing.T, src *fakesource.Source) { src.SendBookmark() },
		want:  []string{"ReplaceBegin", "ReplacePage a b", "ReplacePage c", "ReplaceEnd 4"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, tc.opts, "a", "b", "c") // RV 4
			q, err := deltafifo.New(deltafifo.Options{Capacity: 1000})
			if err != nil {
				t.Fatal(err)
			}
			sink := queueSink{
				Queue: q, once: &sync.Once{}, onFirstPage: func() { tc.fault(t, src) },
				endOnce: &sync.Once{}, ended: make(chan struct{}),
			}
			var mu sync.Mutex
			var handled []string
			clk, stop := runWith(t, src.Endpoint(podGVK, ""), sink, Options{
				ListPageSize: 2,
				UseWatchList: tc.policy,
				WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) {
					mu.Lock()
					defer mu.Unlock()
					handled = append(handled, err.Error())
				},
			})
			select {
			case <-sink.ended:
			case d := <-clk.timers:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("the reflector backed off %v instead of restarting the relist; errors: %q", d, handled)
			case <-time.After(testkit.Timeout()):
				t.Fatalf("no EndReplace within %v", testkit.Timeout())
			}
			stop()
			if got := drainQueue(t, q); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("batches = %v, want %v", got, tc.want)
			}
		})
	}
}
