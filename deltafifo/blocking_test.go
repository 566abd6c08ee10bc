package deltafifo_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// blockedCall is a push made on a full queue.
type blockedCall struct {
	name string
	// fill fills a queue of capacity 2 so that call blocks.
	fill func(*testing.T, *deltafifo.Queue)
	call func(context.Context, *deltafifo.Queue) error
	// pops is the number of Pop(ctx, 1) calls after which call proceeds.
	pops int
}

func blockedCalls() []blockedCall {
	bg := context.Background()
	fillDeltas := func(t *testing.T, q *deltafifo.Queue) {
		must(t, q.Add(bg, testkit.Pod("a", "1")))
		must(t, q.Add(bg, testkit.Pod("b", "2")))
	}
	fillPage := func(t *testing.T, q *deltafifo.Queue) {
		must(t, q.BeginReplace(bg))
		must(t, q.ReplacePage(bg, []interface{}{testkit.Pod("a", "1"), testkit.Pod("b", "2")}))
	}
	return []blockedCall{
		{name: "add", fill: fillDeltas, pops: 1,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.Add(ctx, testkit.Pod("c", "3")) }},
		{name: "update of a queued key", fill: fillDeltas, pops: 1,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.Update(ctx, testkit.Pod("b", "3")) }},
		{name: "delete", fill: fillDeltas, pops: 1,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.Delete(ctx, testkit.Pod("c", "3")) }},
		{name: "bookmark", fill: fillDeltas, pops: 1,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.Bookmark(ctx, "3") }},
		{name: "mark synced", fill: fillDeltas, pops: 1,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.MarkSynced(ctx) }},
		{name: "begin replace", fill: fillDeltas, pops: 1,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.BeginReplace(ctx) }},
		{name: "resync", fill: fillDeltas, pops: 1,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.Resync(ctx) }},
		// The begin marker frees nothing: the second pop does.
		{name: "replace page", fill: fillPage, pops: 2,
			call: func(ctx context.Context, q *deltafifo.Queue) error {
				return q.ReplacePage(ctx, []interface{}{testkit.Pod("c", "3")})
			}},
		{name: "end replace", fill: fillPage, pops: 2,
			call: func(ctx context.Context, q *deltafifo.Queue) error { return q.EndReplace(ctx, "3") }},
		// A two-object page needs the whole page popped.
		{name: "two-object page", fill: fillPage, pops: 3,
			call: func(ctx context.Context, q *deltafifo.Queue) error {
				return q.ReplacePage(ctx, []interface{}{testkit.Pod("c", "3"), testkit.Pod("d", "4")})
			}},
	}
}

func capacityTwo(t *testing.T) *deltafifo.Queue {
	return newQueue(t, deltafifo.Options{
		Capacity:     2,
		KnownObjects: &known{pods: []*corev1.Pod{testkit.Pod("z", "0")}},
	})
}

// TestFullQueueBlocksProducers checks that every push blocks on a full
// queue and proceeds exactly when a pop makes room, or fails with the
// context's error or ErrClosed, queuing nothing.
func TestFullQueueBlocksProducers(t *testing.T) {
	for _, bc := range blockedCalls() {
		t.Run(bc.name+"/unblocked by pop", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := capacityTwo(t)
				bc.fill(t, q)
				done := make(chan error, 1)
				go func() { done <- bc.call(context.Background(), q) }()
				for i := 1; i <= bc.pops; i++ {
					synctest.Wait()
					select {
					case err := <-done:
						t.Fatalf("returned (%v) after %d pops, want blocked until %d", err, i-1, bc.pops)
					default:
					}
					pop(t, q, 1)
				}
				synctest.Wait()
				select {
				case err := <-done:
					must(t, err)
				default:
					t.Fatalf("still blocked after %d pops", bc.pops)
				}
			})
		})
		for _, unblock := range []struct {
			name string
			do   func(cancel context.CancelFunc, q *deltafifo.Queue)
			want error
		}{
			{"cancel", func(cancel context.CancelFunc, _ *deltafifo.Queue) { cancel() }, context.Canceled},
			{"close", func(_ context.CancelFunc, q *deltafifo.Queue) { q.Close() }, deltafifo.ErrClosed},
		} {
			t.Run(bc.name+"/unblocked by "+unblock.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ref := capacityTwo(t)
					bc.fill(t, ref)
					want := drain(t, ref, 1)

					q := capacityTwo(t)
					bc.fill(t, q)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					done := make(chan error, 1)
					go func() { done <- bc.call(ctx, q) }()
					synctest.Wait()
					unblock.do(cancel, q)
					synctest.Wait()
					select {
					case err := <-done:
						if !errors.Is(err, unblock.want) {
							t.Fatalf("got %v, want %v", err, unblock.want)
						}
					default:
						t.Fatal("still blocked")
					}
					equalLines(t, "queued after the failed push", drain(t, q, 1), want)
				})
			})
		}
	}
}

// TestCancelledContextQueuesNothing checks that a push with a done context
// fails even when there is room.
func TestCancelledContextQueuesNothing(t *testing.T) {
	for _, bc := range blockedCalls() {
		t.Run(bc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			q := newQueue(t, deltafifo.Options{KnownObjects: &known{pods: []*corev1.Pod{testkit.Pod("z", "0")}}})
			bc.fill(t, q)
			depth := q.Depth()
			if err := bc.call(ctx, q); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if q.Depth() != depth {
				t.Fatalf("Depth changed from %d to %d", depth, q.Depth())
			}
		})
	}
}

// TestOversizedPage checks that a page larger than the capacity enters an
// empty queue only.
func TestOversizedPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		q := newQueue(t, deltafifo.Options{Capacity: 2})
		must(t, q.BeginReplace(ctx))
		big := []interface{}{testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3"), testkit.Pod("d", "4"), testkit.Pod("e", "5")}
		must(t, q.ReplacePage(ctx, big)) // empty queue: accepted at once
		done := make(chan error, 1)
		go func() { done <- q.ReplacePage(ctx, []interface{}{testkit.Pod("f", "6")}) }()
		pop(t, q, 10) // begin
		for _, want := range []string{"ReplacePage a/1 b/2 c/3 initial", "ReplacePage d/4 e/5 initial"} {
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("small page returned (%v) while the queue held %d objects", err, q.Depth())
			default:
			}
			if got := describe(pop(t, q, 3)); got != want {
				t.Fatalf("popped %q, want %q", got, want)
			}
		}
		synctest.Wait()
		select {
		case err := <-done:
			must(t, err)
		default:
			t.Fatal("small page still blocked on an empty queue")
		}
	})
}

// TestPopBlocking covers a Pop waiting for data: woken by a push,
// cancelled by its context, or ended by Close.
func TestPopBlocking(t *testing.T) {
	type result struct {
		b   deltafifo.Batch
		err error
	}
	tests := []struct {
		name    string
		wake    func(*testing.T, context.CancelFunc, *deltafifo.Queue)
		want    string
		wantErr error
	}{
		{name: "woken by an add", want: "Deltas rv=1 a[Added:a/1]",
			wake: func(t *testing.T, _ context.CancelFunc, q *deltafifo.Queue) {
				must(t, q.Add(context.Background(), testkit.Pod("a", "1")))
			}},
		{name: "woken by a bookmark", want: "Deltas rv=7",
			wake: func(t *testing.T, _ context.CancelFunc, q *deltafifo.Queue) {
				must(t, q.Bookmark(context.Background(), "7"))
			}},
		{name: "woken by a marker", want: "Synced",
			wake: func(t *testing.T, _ context.CancelFunc, q *deltafifo.Queue) {
				must(t, q.MarkSynced(context.Background()))
			}},
		{name: "cancelled", wantErr: context.Canceled,
			wake: func(_ *testing.T, cancel context.CancelFunc, _ *deltafifo.Queue) { cancel() }},
		{name: "closed", wantErr: deltafifo.ErrClosed,
			wake: func(_ *testing.T, _ context.CancelFunc, q *deltafifo.Queue) { q.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, deltafifo.Options{})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan result, 1)
				go func() {
					b, err := q.Pop(ctx, 10)
					done <- result{b, err}
				}()
				synctest.Wait()
				select {
				case r := <-done:
					t.Fatalf("Pop on an empty queue returned %q, %v", describe(r.b), r.err)
				default:
				}
				tc.wake(t, cancel, q)
				synctest.Wait()
				var r result
				select {
				case r = <-done:
				default:
					t.Fatal("Pop still blocked")
				}
				if tc.wantErr != nil {
					if !errors.Is(r.err, tc.wantErr) {
						t.Fatalf("Pop error %v, want %v", r.err, tc.wantErr)
					}
					return
				}
				must(t, r.err)
				if got := describe(r.b); got != tc.want {
					t.Fatalf("Pop = %q, want %q", got, tc.want)
				}
			})
		})
	}
}

// TestPopCancelledLosesNothing checks that a Pop with a done context
// leaves the queue untouched.
func TestPopCancelledLosesNothing(t *testing.T) {
	q := newQueue(t, deltafifo.Options{})
	must(t, q.Add(context.Background(), testkit.Pod("a", "1")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Pop(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop with a cancelled context = %v, want context.Canceled", err)
	}
	equalLines(t, "batches", drain(t, q, 10), []string{"Deltas rv=1 a[Added:a/1]"})
}

// TestCloseDrains checks that Pop returns what was queued before Close,
// then ErrClosed, and that Close is idempotent.
func TestCloseDrains(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, deltafifo.Options{})
	must(t, q.Add(ctx, testkit.Pod("a", "1")))
	must(t, q.BeginReplace(ctx))
	must(t, q.ReplacePage(ctx, []interface{}{testkit.Pod("b", "2")}))
	q.Close()
	q.Close()
	if err := q.Add(ctx, testkit.Pod("c", "3")); !errors.Is(err, deltafifo.ErrClosed) {
		t.Fatalf("Add after Close = %v, want ErrClosed", err)
	}
	// The replace left open by Close is drained without an end.
	equalLines(t, "batches", drain(t, q, 10), []string{
		"Deltas rv=1 a[Added:a/1]", "ReplaceBegin", "ReplacePage b/2",
	})
	if _, err := q.Pop(ctx, 10); !errors.Is(err, deltafifo.ErrClosed) {
		t.Fatalf("Pop on a drained closed queue = %v, want ErrClosed", err)
	}
}

// TestEmptyPageDoesNotBlock checks that an empty page on a full queue
// returns at once and queues nothing.
func TestEmptyPageDoesNotBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		q := newQueue(t, deltafifo.Options{Capacity: 1})
		must(t, q.BeginReplace(ctx))
		must(t, q.ReplacePage(ctx, []interface{}{testkit.Pod("a", "1")}))
		done := make(chan error, 1)
		go func() { done <- q.ReplacePage(ctx, nil) }()
		synctest.Wait()
		select {
		case err := <-done:
			must(t, err)
		default:
			t.Fatal("an empty page blocked on a full queue")
		}
		equalLines(t, "batches", drain(t, q, 10), []string{"ReplaceBegin initial", "ReplacePage a/1 initial"})
	})
}

// TestReady checks that Ready reports a queued batch, including a marker
// that carries no delta, and a closed queue: what Pop returns at once.
func TestReady(t *testing.T) {
	q := newQueue(t, deltafifo.Options{})
	pop := func() {
		t.Helper()
		if _, err := q.Pop(context.Background(), 10); err != nil {
			t.Fatal(err)
		}
	}
	if q.Ready() {
		t.Fatal("an empty queue is ready")
	}
	must(t, q.MarkSynced(context.Background()))
	if !q.Ready() {
		t.Fatal("a queued Synced marker is not ready")
	}
	pop()
	if q.Ready() {
		t.Fatal("a popped queue is ready")
	}
	must(t, q.Add(context.Background(), testkit.Pod("a", "1")))
	if !q.Ready() {
		t.Fatal("a queued delta is not ready")
	}
	pop()
	q.Close()
	if !q.Ready() {
		t.Fatal("a closed queue is not ready: Pop returns ErrClosed at once")
	}
}
