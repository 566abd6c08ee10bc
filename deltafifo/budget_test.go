package deltafifo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// budgetMetrics records a budget's metrics. It is called with the
// budget's lock held.
type budgetMetrics struct {
	mu       sync.Mutex
	used     []int
	maxUsed  int
	limit    int
	blocked  int
	overflow int // reports above limit+slack
	slack    int
}

func (m *budgetMetrics) Used(used, limit int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used = append(m.used, used)
	m.maxUsed = max(m.maxUsed, used)
	m.limit = limit
	if used > limit+m.slack {
		m.overflow++
	}
}

func (m *budgetMetrics) Blocked() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocked++
}

func newBudget(t *testing.T, limit int, m deltafifo.BudgetMetrics) *deltafifo.Budget {
	t.Helper()
	b, err := deltafifo.NewBudget(deltafifo.BudgetOptions{Limit: limit, Metrics: m})
	if err != nil {
		t.Fatalf("NewBudget: %v", err)
	}
	return b
}

// async runs call on a goroutine and returns its result channel.
func async(call func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	return done
}

// blocked fails the test unless done has no result once every goroutine of
// the bubble is blocked.
func blocked(t *testing.T, what string, done <-chan error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v), want blocked", what, err)
	default:
	}
}

// returned waits for the bubble to settle and returns done's result,
// failing the test if there is none.
func returned(t *testing.T, what string, done <-chan error) error {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-done:
		return err
	default:
		t.Fatalf("%s still blocked", what)
		return nil
	}
}

func checkUsed(t *testing.T, b *deltafifo.Budget, want int) {
	t.Helper()
	if got := b.Used(); got != want {
		t.Fatalf("budget Used %d, want %d", got, want)
	}
}

func TestNewBudgetRejectsNonPositiveLimit(t *testing.T) {
	for _, limit := range []int{0, -1} {
		if _, err := deltafifo.NewBudget(deltafifo.BudgetOptions{Limit: limit}); !errors.Is(err, deltafifo.ErrInvalidArgument) {
			t.Errorf("NewBudget(%d): %v, want ErrInvalidArgument", limit, err)
		}
	}
}

// TestBudgetBlocksUntilAnotherQueuePops checks that a push that does not
// fit in the shared budget blocks, although its own queue has room, until
// another queue's pop frees some of it.
func TestBudgetBlocksUntilAnotherQueuePops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := &budgetMetrics{}
		b := newBudget(t, 6, m) // each queue's share: 3
		qa := newQueue(t, deltafifo.Options{Name: "a", Capacity: 100, Budget: b})
		qb := newQueue(t, deltafifo.Options{Name: "b", Capacity: 100, Budget: b})
		qc := newQueue(t, deltafifo.Options{Name: "c", Capacity: 100, Budget: b})
		must(t, qa.Add(ctx, testkit.Pod("a1", "1")))
		must(t, qa.Add(ctx, testkit.Pod("a2", "2")))
		must(t, qb.Add(ctx, testkit.Pod("b1", "3")))
		must(t, qb.Add(ctx, testkit.Pod("b2", "4")))
		must(t, qc.Add(ctx, testkit.Pod("c1", "3")))
		must(t, qc.Add(ctx, testkit.Pod("c2", "4")))
		checkUsed(t, b, 6)

		done := async(func() error { return qb.Add(ctx, testkit.Pod("b3", "5")) })
		blocked(t, "add into a spent budget", done)
		if m.blocked != 1 {
			t.Errorf("Blocked counted %d times, want 1", m.blocked)
		}
		// Markers hold no objects: they do not wait for the budget.
		must(t, qa.Bookmark(ctx, "6"))
		blocked(t, "add after a bookmark", done)

		pop(t, qa, 1) // frees one
		must(t, returned(t, "add after another queue's pop", done))
		checkUsed(t, b, 6)
		if qb.Depth() != 3 {
			t.Errorf("queue b depth %d, want 3", qb.Depth())
		}
		equalLines(t, "queue b", drain(t, qb, 10), []string{"Deltas rv=5 b1[Added:b1/3] b2[Added:b2/4] b3[Added:b3/5]"})
		checkUsed(t, b, 3) // closing b gave its share back
		if m.limit != 6 {
			t.Errorf("metrics limit %d, want 6", m.limit)
		}
	})
}

// TestBudgetShare checks that one queue holds at most half the budget,
// so that a queue whose consumer is stuck leaves the rest to the others.
func TestBudgetShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := newBudget(t, 4, nil)
		stuck := newQueue(t, deltafifo.Options{Name: "stuck", Capacity: 100, Budget: b})
		must(t, stuck.Add(ctx, testkit.Pod("a", "1")))
		must(t, stuck.Add(ctx, testkit.Pod("b", "2")))
		done := async(func() error { return stuck.Add(ctx, testkit.Pod("c", "3")) })
		blocked(t, "add beyond the queue's share", done)

		other := newQueue(t, deltafifo.Options{Name: "other", Capacity: 100, Budget: b})
		must(t, other.Add(ctx, testkit.Pod("x", "1")))
		must(t, other.Add(ctx, testkit.Pod("y", "2")))
		checkUsed(t, b, 4)

		pop(t, stuck, 1)
		must(t, returned(t, "add after the queue's own pop", done))
		checkUsed(t, b, 4)
	})
}

// TestBudgetEmptyQueueAlwaysAdmits checks that a queue makes progress when
// the budget is spent by others: an empty queue takes one push, a delta or
// a page larger than the whole budget, and the next waits until it has
// been popped.
func TestBudgetEmptyQueueAlwaysAdmits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := newBudget(t, 4, nil)
		for _, name := range []string{"a", "b"} {
			q := newQueue(t, deltafifo.Options{Name: name, Capacity: 100, Budget: b})
			must(t, q.Add(ctx, testkit.Pod(name+"1", "1")))
			must(t, q.Add(ctx, testkit.Pod(name+"2", "2")))
		}
		checkUsed(t, b, 4)

		q := newQueue(t, deltafifo.Options{Name: "c", Capacity: 2, Budget: b})
		must(t, q.BeginReplace(ctx)) // a marker: no budget
		big := []interface{}{testkit.Pod("p1", "1"), testkit.Pod("p2", "1"), testkit.Pod("p3", "1"), testkit.Pod("p4", "1"), testkit.Pod("p5", "1")}
		must(t, q.ReplacePage(ctx, big)) // empty queue: admitted over Capacity and budget
		checkUsed(t, b, 9)

		done := async(func() error { return q.ReplacePage(ctx, []interface{}{testkit.Pod("p6", "1")}) })
		pop(t, q, 10) // begin marker
		for _, want := range []string{"ReplacePage p1/1 p2/1 p3/1 initial", "ReplacePage p4/1 p5/1 initial"} {
			blocked(t, "page into a non-empty queue over the budget", done)
			if got := describe(pop(t, q, 3)); got != want {
				t.Fatalf("popped %q, want %q", got, want)
			}
		}
		must(t, returned(t, "page into the emptied queue", done))
		checkUsed(t, b, 5)

		// A delta is admitted into the empty queue likewise.
		pop(t, q, 10)
		checkUsed(t, b, 4)
		must(t, q.EndReplace(ctx, "7"))
		pop(t, q, 10)
		must(t, q.Add(ctx, testkit.Pod("d", "8")))
		checkUsed(t, b, 5)
		done = async(func() error { return q.Add(ctx, testkit.Pod("e", "9")) })
		blocked(t, "second add over the budget", done)
		pop(t, q, 10)
		must(t, returned(t, "add into the emptied queue", done))
	})
}

// TestBudgetReleasedOnEveryPath checks that the budget charged is the
// queues' depth after every kind of change: a deduplicated delete and a
// Sync for a queued key take nothing, an aborted replace gives its pages
// back, and Close gives back whatever is still queued.
func TestBudgetReleasedOnEveryPath(t *testing.T) {
	ctx := context.Background()
	b := newBudget(t, 100, nil)
	q := newQueue(t, deltafifo.Options{Capacity: 100, Budget: b, KnownObjects: &known{pods: []*corev1.Pod{testkit.Pod("a", "1"), testkit.Pod("k", "1")}}})
	must(t, q.Add(ctx, testkit.Pod("a", "1")))
	must(t, q.Delete(ctx, testkit.Pod("a", "2")))
	must(t, q.Delete(ctx, tomb("a", nil))) // deduplicated
	checkUsed(t, b, 2)
	must(t, q.Resync(ctx)) // a is queued: only k is added
	checkUsed(t, b, 3)
	pop(t, q, 10)
	checkUsed(t, b, 0)

	must(t, q.BeginReplace(ctx))
	must(t, q.ReplacePage(ctx, pods("b", "c", "d")))
	checkUsed(t, b, 3)
	pop(t, q, 10) // begin
	pop(t, q, 1)
	checkUsed(t, b, 2)
	must(t, q.AbortReplace())
	checkUsed(t, b, 0)
	if got := describe(pop(t, q, 10)); got != "ReplaceAbort" {
		t.Fatalf("popped %q, want ReplaceAbort", got)
	}

	must(t, q.Add(ctx, testkit.Pod("e", "1")))
	must(t, q.Add(ctx, testkit.Pod("f", "1")))
	checkUsed(t, b, 2)
	q.Close()
	checkUsed(t, b, 0)
	// Popping what was queued before Close gives nothing back twice.
	if got := describe(pop(t, q, 1)); got != "Deltas rv=1 e[Added:e/1]" {
		t.Errorf("popped %q after Close", got)
	}
	checkUsed(t, b, 0)
	q.Close()
	checkUsed(t, b, 0)
}

// TestBudgetClosedQueueFreesWaiters checks that closing a queue whose
// consumer stopped unblocks the pushes of the queues sharing its budget.
func TestBudgetClosedQueueFreesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := newBudget(t, 4, nil)
		dead := newQueue(t, deltafifo.Options{Name: "dead", Capacity: 100, Budget: b})
		live := newQueue(t, deltafifo.Options{Name: "live", Capacity: 100, Budget: b})
		must(t, dead.Add(ctx, testkit.Pod("a", "1")))
		must(t, dead.Add(ctx, testkit.Pod("b", "2")))
		must(t, live.Add(ctx, testkit.Pod("x", "1")))
		must(t, live.Add(ctx, testkit.Pod("y", "2")))
		done := async(func() error { return live.Add(ctx, testkit.Pod("z", "3")) })
		// The dead queue's own producer is blocked too (share spent).
		deadPush := async(func() error { return dead.Add(ctx, testkit.Pod("c", "3")) })
		blocked(t, "add while another queue's consumer is stopped", done)
		blocked(t, "the stopped queue's add", deadPush)

		dead.Close()
		if err := returned(t, "the stopped queue's add", deadPush); !errors.Is(err, deltafifo.ErrClosed) {
			t.Fatalf("the stopped queue's add: %v, want ErrClosed", err)
		}
		blocked(t, "add beyond the live queue's share", done)
		checkUsed(t, b, 2)
		pop(t, live, 1)
		must(t, returned(t, "add after the live queue's pop", done))
		checkUsed(t, b, 2)
	})
}

// TestBudgetWaitEndsOnCancelAndClose checks that a push blocked on the
// budget returns its context's error, or ErrClosed when its queue is
// closed, and takes nothing.
func TestBudgetWaitEndsOnCancelAndClose(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(context.CancelFunc, *deltafifo.Queue)
		want error
	}{
		{"cancel", func(cancel context.CancelFunc, _ *deltafifo.Queue) { cancel() }, context.Canceled},
		{"close", func(_ context.CancelFunc, q *deltafifo.Queue) { q.Close() }, deltafifo.ErrClosed},
	} {
		for _, push := range []struct {
			name string
			call func(context.Context, *deltafifo.Queue) error
		}{
			{"add", func(ctx context.Context, q *deltafifo.Queue) error { return q.Add(ctx, testkit.Pod("c", "3")) }},
			{"resync", func(ctx context.Context, q *deltafifo.Queue) error { return q.Resync(ctx) }},
		} {
			t.Run(tc.name+"/"+push.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					b := newBudget(t, 4, nil)
					other := newQueue(t, deltafifo.Options{Name: "other", Capacity: 100, Budget: b})
					must(t, other.Add(ctx, testkit.Pod("x", "1")))
					must(t, other.Add(ctx, testkit.Pod("y", "2")))
					q := newQueue(t, deltafifo.Options{Capacity: 100, Budget: b, KnownObjects: &known{pods: []*corev1.Pod{testkit.Pod("k", "1")}}})
					must(t, q.Add(ctx, testkit.Pod("a", "1")))
					must(t, q.Add(ctx, testkit.Pod("b", "2")))
					checkUsed(t, b, 4)
					done := async(func() error { return push.call(ctx, q) })
					blocked(t, push.name, done)
					tc.end(cancel, q)
					if err := returned(t, push.name, done); !errors.Is(err, tc.want) {
						t.Fatalf("%s: %v, want %v", push.name, err, tc.want)
					}
					want := 4
					if tc.name == "close" {
						want = 2 // the closed queue gave its share back
					} else if q.Depth() != 2 {
						t.Errorf("depth %d after the cancelled push, want 2", q.Depth())
					}
					checkUsed(t, b, want)
				})
			})
		}
	}
}

// TestBudgetPopCancelKeepsCharge checks that a Pop interrupted by its
// context (as the informer interrupts it to serve a late handler) neither
// takes nor gives back anything.
func TestBudgetPopCancelKeepsCharge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(t, 4, nil)
		q := newQueue(t, deltafifo.Options{Budget: b})
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() error { _, err := q.Pop(ctx, 1); return err })
		blocked(t, "pop of an empty queue", done)
		cancel()
		if err := returned(t, "pop", done); !errors.Is(err, context.Canceled) {
			t.Fatalf("pop: %v, want context.Canceled", err)
		}
		checkUsed(t, b, 0)
		must(t, q.Add(context.Background(), testkit.Pod("a", "1")))
		ctx, cancel = context.WithCancel(context.Background())
		cancel()
		if _, err := q.Pop(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("pop with a done context: %v", err)
		}
		checkUsed(t, b, 1)
	})
}

// TestBudgetConcurrentQueues runs many queues with a producer and a
// consumer each under a small shared budget, under the race detector: every
// object is delivered exactly once, the budget never holds more than its
// limit plus one push per queue, it is charged exactly the queues' depths
// once the consumers stop (before any Close, which zeroes a queue's
// share), and it is empty once they are drained.
func TestBudgetConcurrentQueues(t *testing.T) {
	const queues, limit, page = 8, 16, 5
	objects := 3000
	if testing.Short() {
		objects = 500
	}
	m := &budgetMetrics{slack: queues * page}
	b := newBudget(t, limit, m)
	ctx := context.Background()
	var wg sync.WaitGroup
	counts := make([]int, queues)
	qs := make([]*deltafifo.Queue, queues)
	for k := range queues {
		q := newQueue(t, deltafifo.Options{Name: fmt.Sprint(k), Capacity: 10, Budget: b})
		qs[k] = q
		// The consumer pops until its producer is done, then stops,
		// leaving what is still queued.
		popCtx, produced := context.WithCancel(ctx)
		wg.Go(func() { // producer
			defer produced()
			r := rand.New(rand.NewPCG(uint64(k), 1))
			for i := 0; i < objects; {
				var err error
				if r.IntN(4) == 0 {
					n := min(page, objects-i)
					objs := make([]interface{}, n)
					for j := range objs {
						objs[j] = testkit.Pod(fmt.Sprint(i+j), "1")
					}
					if err = q.BeginReplace(ctx); err == nil {
						err = q.ReplacePage(ctx, objs)
					}
					if err == nil {
						err = q.EndReplace(ctx, fmt.Sprint(i+n))
					}
					i += n
				} else {
					err = q.Add(ctx, testkit.Pod(fmt.Sprint(i), fmt.Sprint(i+1)))
					i++
				}
				if err != nil {
					t.Errorf("queue %d: %v", k, err)
					return
				}
			}
		})
		wg.Go(func() { // consumer
			r := rand.New(rand.NewPCG(uint64(k), 2))
			for {
				bt, err := q.Pop(popCtx, 1+r.IntN(4))
				if errors.Is(err, context.Canceled) {
					return
				}
				if err != nil {
					t.Errorf("queue %d: pop: %v", k, err)
					return
				}
				counts[k] += bt.Len()
			}
		})
	}
	wg.Wait()
	depths := 0
	for _, q := range qs {
		depths += q.Depth()
	}
	checkUsed(t, b, depths)
	for k, q := range qs {
		for q.Depth() > 0 {
			bt, err := q.Pop(ctx, 4)
			if err != nil {
				t.Fatalf("queue %d: drain: %v", k, err)
			}
			counts[k] += bt.Len()
		}
	}
	checkUsed(t, b, 0) // before Close: the pops gave everything back
	for _, q := range qs {
		q.Close()
	}
	for k, n := range counts {
		if n != objects {
			t.Errorf("queue %d delivered %d objects, want %d", k, n, objects)
		}
	}
	checkUsed(t, b, 0)
	if m.overflow > 0 {
		t.Errorf("budget reported above limit+%d %d times (max %d)", m.slack, m.overflow, m.maxUsed)
	}
	if m.maxUsed < limit/2 {
		t.Errorf("budget peaked at %d: the test did not load it", m.maxUsed)
	}
}

// pods returns pods of the given names, resourceVersion "1".
func pods(names ...string) []interface{} {
	out := make([]interface{}, len(names))
	for i, n := range names {
		out[i] = testkit.Pod(n, "1")
	}
	return out
}

// TestBudgetFloor checks that a queue keeps a floor of the budget (1/64 of
// the limit, at most 64) while other queues hold all of it, so that its
// consumer pops batches rather than one delta at a time; the push past
// the floor waits.
func TestBudgetFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const limit = 640 // floor 10
		b := newBudget(t, limit, nil)
		for _, name := range []string{"slow-1", "slow-2"} {
			q := newQueue(t, deltafifo.Options{Name: name, Capacity: limit, Budget: b})
			for i := range limit / 2 {
				must(t, q.Add(ctx, testkit.Pod(fmt.Sprintf("%s-%d", name, i), "1")))
			}
		}
		checkUsed(t, b, limit)

		q := newQueue(t, deltafifo.Options{Name: "busy", Capacity: limit, Budget: b})
		for i := range 10 {
			must(t, q.Add(ctx, testkit.Pod(fmt.Sprintf("p%d", i), "2")))
		}
		checkUsed(t, b, limit+10)
		done := async(func() error { return q.Add(ctx, testkit.Pod("p10", "2")) })
		blocked(t, "add past the floor of a spent budget", done)
		if n := len(pop(t, q, 100).Keys); n != 10 {
			t.Fatalf("popped a batch of %d, want the floor's 10", n)
		}
		must(t, returned(t, "add after the queue's own pop", done))
	})
}
