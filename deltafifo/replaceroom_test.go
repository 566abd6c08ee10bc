package deltafifo_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// TestReplaceRoomGrows checks that a relist's pages are queued up to an
// eighth of the page objects popped since BeginReplace (at least 64),
// not up to Capacity from the start: a producer of pages of 10 into a
// queue of Capacity 1000 blocks at a depth of 60 until 520 objects were
// popped, then higher as more are, and a later relist starts again at 60.
func TestReplaceRoomGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		q := newQueue(t, deltafifo.Options{Capacity: 1000})
		next := 0
		page := func() []interface{} {
			objs := make([]interface{}, 10)
			for i := range objs {
				objs[i] = testkit.Pod(fmt.Sprintf("p%05d", next), "1")
				next++
			}
			return objs
		}
		// produce pushes pages of 10 until stopped.
		produce := func(ctx context.Context) <-chan error {
			done := make(chan error, 1)
			go func() {
				for {
					if err := q.ReplacePage(ctx, page()); err != nil {
						done <- err
						return
					}
				}
			}()
			return done
		}
		pop := func(n int) {
			t.Helper()
			for n > 0 {
				b, err := q.Pop(ctx, n)
				must(t, err)
				n -= len(b.Objects)
			}
		}
		// relist checks steps depths: the depth at which the producer
		// blocks, popped whole each time, is the largest multiple of
		// 10 in the room, max(64, popped/8).
		relist := func(steps int) {
			t.Helper()
			must(t, q.BeginReplace(ctx))
			b, err := q.Pop(ctx, 1) // the begin marker
			must(t, err)
			if b.Kind != deltafifo.KindReplaceBegin {
				t.Fatalf("popped %v, want the begin marker", b.Kind)
			}
			pctx, stop := context.WithCancel(ctx)
			done := produce(pctx)
			popped := 0
			for i := range steps {
				synctest.Wait()
				want := max(64, popped/8) / 10 * 10
				if got := q.Depth(); got != want {
					t.Fatalf("step %d: depth %d with %d popped since BeginReplace, want %d", i, got, popped, want)
				}
				pop(want)
				popped += want
			}
			stop()
			if err := <-done; err == nil {
				t.Fatal("the producer stopped without an error")
			}
			pop(q.Depth())
			must(t, q.EndReplace(ctx, "2"))
			if b, err := q.Pop(ctx, 1); err != nil || b.Kind != deltafifo.KindReplaceEnd {
				t.Fatalf("popped %v, %v, want the end marker", b.Kind, err)
			}
		}
		// From 60 at a time to 200 (1,860 popped): without the
		// room, the producer fills the queue to 1,000.
		relist(20)
		// A new relist starts again at 60.
		relist(2)
	})
}
