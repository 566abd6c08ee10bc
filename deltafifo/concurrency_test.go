package deltafifo_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// TestConcurrentProducerConsumer runs a producer (watch events, bookmarks,
// relists), a resyncer and a consumer against a small queue under the race
// detector, and checks exactly-once, per-key ordered delivery and the safe
// resourceVersion invariant as the consumer sees it.
func TestConcurrentProducerConsumer(t *testing.T) {
	ctx := context.Background()
	events := 20000
	if testing.Short() {
		events = 3000
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	q := newQueue(t, deltafifo.Options{Capacity: 64, KnownObjects: store})

	// isEvent[rv] is set before the event with that resourceVersion is
	// pushed; bookmarks and list ends leave gaps.
	var mu sync.Mutex
	isEvent := make([]bool, 2*events+2)
	lastRV := 0

	var wg sync.WaitGroup
	// On a failure, stop the goroutines before the test ends.
	defer func() { q.Close(); wg.Wait() }()
	producerDone := make(chan struct{})
	wg.Go(func() { // producer; t.Fatal must not be called here
		defer close(producerDone)
		defer q.Close()
		r := rand.New(rand.NewPCG(1, 2))
		exists := map[string]bool{}
		rv := 0
		push := func(err error) bool {
			if err != nil {
				t.Errorf("producer: %v", err)
			}
			return err == nil
		}
		for i := 0; i < events; i++ {
			rv++
			mu.Lock()
			lastRV = rv
			mu.Unlock()
			switch n := r.IntN(100); {
			case n < 5:
				if !push(q.Bookmark(ctx, strconv.Itoa(rv))) {
					return
				}
				continue
			case n < 6:
				if !push(q.BeginReplace(ctx)) ||
					!push(q.ReplacePage(ctx, []interface{}{testkit.Pod("x", "1"), testkit.Pod("y", "1")})) ||
					!push(q.EndReplace(ctx, strconv.Itoa(rv))) {
					return
				}
				continue
			}
			k := "k" + strconv.Itoa(r.IntN(50))
			mu.Lock()
			isEvent[rv] = true
			mu.Unlock()
			p := testkit.Pod(k, strconv.Itoa(rv))
			var err error
			switch {
			case !exists[k]:
				err = q.Add(ctx, p)
				exists[k] = true
			case r.IntN(4) == 0:
				err = q.Delete(ctx, p)
				exists[k] = false
			default:
				err = q.Update(ctx, p)
			}
			if !push(err) {
				return
			}
		}
	})
	wg.Go(func() { // resyncer
		for {
			select {
			case <-producerDone:
				return
			default:
			}
			if err := q.Resync(ctx); err != nil && !errors.Is(err, deltafifo.ErrClosed) {
				t.Errorf("Resync: %v", err)
				return
			}
		}
	})

	// The consumer.
	r := rand.New(rand.NewPCG(3, 4))
	popped := make([]bool, len(isEvent))
	lastOf := map[string]int{}
	checked, delivered := 0, 0
	for {
		b, err := q.Pop(ctx, 1+r.IntN(8))
		if errors.Is(err, deltafifo.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Pop: %v", err)
		}
		for i, ds := range b.Deltas {
			for _, d := range ds {
				if d.Type == cache.Sync {
					continue
				}
				p := d.Object.(*corev1.Pod)
				rv, _ := strconv.Atoi(p.ResourceVersion)
				if popped[rv] || rv <= lastOf[b.Keys[i]] {
					t.Fatalf("event %d of %s popped twice or out of order", rv, b.Keys[i])
				}
				popped[rv], lastOf[b.Keys[i]] = true, rv
				if d.Type == cache.Deleted {
					must(t, store.Delete(p))
				} else {
					must(t, store.Update(p))
				}
			}
		}
		if (b.Kind == deltafifo.KindDeltas || b.Kind == deltafifo.KindReplaceEnd) && b.ResourceVersion != "" {
			safe, _ := strconv.Atoi(b.ResourceVersion)
			if safe < delivered {
				t.Fatalf("safe RV went back from %d to %d", delivered, safe)
			}
			mu.Lock()
			for ; checked < safe; checked++ {
				if isEvent[checked+1] && !popped[checked+1] {
					mu.Unlock()
					t.Fatalf("batch with safe RV %d while event %d is queued", safe, checked+1)
				}
			}
			mu.Unlock()
			delivered = safe
		}
	}
	wg.Wait()
	for rv, ev := range isEvent {
		if ev && !popped[rv] {
			t.Fatalf("event %d never popped", rv)
		}
	}
	if delivered != lastRV {
		t.Fatalf("final safe RV %d, want the last pushed %d", delivered, lastRV)
	}
}
