package storebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/internal/podgen"
)

// Timer is started around store calls and stopped around everything else
// (generating and decoding pods). *testing.B and *measure.Stopwatch
// implement it.
type Timer interface {
	StartTimer()
	StopTimer()
}

// Load adds pods 0..n-1 of c to t in batches of t's batch size, in
// generation order: consecutive pods fall anywhere in the key space, as
// watch ADDED events do (a list arrives in key order: see Replace). The
// timer runs only during the writes; it must be stopped on entry and is
// stopped on return.
func Load(ctx context.Context, t *Target, c *Corpus, n int, tm Timer) error {
	if n <= 0 || n > c.Len() {
		return fmt.Errorf("%w: load %d pods from a corpus of %d", ErrInvalidArgument, n, c.Len())
	}
	return t.writeBatches(ctx, "load", n, cache.TransactionTypeAdd, c.Decode, 0, tm)
}

// Update applies m updates to a target holding pods 0..n-1 of c, in
// batches of t's batch size. The updated pods are spread over the whole
// key range (pod (k*stride) mod n for the k-th update, stride coprime with
// n), each carries generation gen and a resourceVersion above n. The timer
// runs only during the writes.
func Update(ctx context.Context, t *Target, c *Corpus, n, m, gen int, tm Timer) error {
	if n <= 0 || n > c.Len() || m <= 0 || gen <= 0 {
		return fmt.Errorf("%w: update %d of %d pods, generation %d", ErrInvalidArgument, m, n, gen)
	}
	stride := measure.SpreadStride(n)
	base := n + (gen-1)*m
	updated := func(k int) (*corev1.Pod, error) {
		return c.Updated(int((int64(k)*int64(stride))%int64(n)), gen, strconv.Itoa(base+k+1))
	}
	return t.writeBatches(ctx, "update", m, cache.TransactionTypeUpdate, updated, base, tm)
}

// writeBatches writes m transactions of type typ to t in batches of t's
// batch size: the k-th of object(k); a batch that ends before the end-th
// has resourceVersion rvBase+end. op names the writes in errors. The timer
// runs only during the writes.
func (t *Target) writeBatches(ctx context.Context, op string, m int, typ cache.TransactionType, object func(k int) (*corev1.Pod, error), rvBase int, tm Timer) error {
	txns := make([]cache.Transaction, 0, t.batchSize)
	for start := 0; start < m; start += t.batchSize {
		txns = txns[:0]
		end := min(start+t.batchSize, m)
		for k := start; k < end; k++ {
			p, err := object(k)
			if err != nil {
				return err
			}
			txns = append(txns, cache.Transaction{Type: typ, Object: p})
		}
		rv := strconv.Itoa(rvBase + end)
		tm.StartTimer()
		err := t.write(ctx, txns, rv)
		tm.StopTimer()
		if err != nil {
			return fmt.Errorf("storebench: %s %s: %w", op, t.Name, err)
		}
	}
	clear(txns)
	return nil
}

// GetByKey performs samples lookups of random keys among pods 0..n-1 and
// adds each one's latency to lat. Every key must exist. The timer runs
// during the lookups.
func GetByKey(t *Target, c *Corpus, n, samples int, rng *rand.Rand, lat *measure.Latencies, tm Timer) error {
	if n <= 0 || n > c.Len() || samples <= 0 {
		return fmt.Errorf("%w: %d lookups among %d pods", ErrInvalidArgument, samples, n)
	}
	for range samples {
		key := c.Key(rng.IntN(n))
		tm.StartTimer()
		start := time.Now()
		_, ok, err := t.Indexer.GetByKey(key)
		d := time.Since(start)
		tm.StopTimer()
		if err != nil {
			return fmt.Errorf("storebench: %s get %s: %w", t.Name, key, err)
		}
		if !ok {
			return fmt.Errorf("storebench: %s get %s: not found", t.Name, key)
		}
		lat.Add(d)
	}
	return nil
}

// ByNamespace performs samples ByIndex(cache.NamespaceIndex, ns) lookups of
// random podgen namespaces on a target holding pods 0..n-1 and adds each
// one's latency to lat. It checks that each returns the namespace's pods.
// The timer runs during the lookups.
func ByNamespace(t *Target, c *Corpus, n, samples int, rng *rand.Rand, lat *measure.Latencies, tm Timer) error {
	if n <= 0 || n > c.Len() || samples <= 0 {
		return fmt.Errorf("%w: %d index lookups among %d pods", ErrInvalidArgument, samples, n)
	}
	for range samples {
		// Pod i is in namespace number i % podgen.Namespaces.
		ns := rng.IntN(min(podgen.Namespaces, n))
		name, _, _ := strings.Cut(c.Key(ns), "/")
		tm.StartTimer()
		start := time.Now()
		objs, err := t.Indexer.ByIndex(cache.NamespaceIndex, name)
		d := time.Since(start)
		tm.StopTimer()
		if err != nil {
			return fmt.Errorf("storebench: %s by namespace %s: %w", t.Name, name, err)
		}
		if want := podsInNamespace(n, ns); len(objs) != want {
			return fmt.Errorf("storebench: %s by namespace %s: %d objects, want %d", t.Name, name, len(objs), want)
		}
		lat.Add(d)
	}
	return nil
}

// podsInNamespace returns how many of pods 0..n-1 podgen puts in namespace
// number ns.
func podsInNamespace(n, ns int) int {
	full := n / podgen.Namespaces
	if ns < n%podgen.Namespaces {
		return full + 1
	}
	return full
}

// Replace replaces the content of t with pods 0..n-1 of c at generation
// gen, as a relist does: in key order (Corpus.ListOrder), client-go's
// store in one Replace call (its only way), warmcache's stores in pages of
// t's page size through BeginReplace, as warmcache's informer writes a
// relist. The timer runs only during store calls; for client-go the list
// is decoded before.
func Replace(ctx context.Context, t *Target, c *Corpus, n, gen int, tm Timer) error {
	if n <= 0 || n > c.Len() || gen <= 0 {
		return fmt.Errorf("%w: replace with %d pods, generation %d", ErrInvalidArgument, n, gen)
	}
	rv := strconv.Itoa(n + gen*n)
	order := c.ListOrder(n)
	decode := func(i int) (interface{}, error) { return c.Updated(order[i], gen, rv) }
	if t.ws == nil {
		list := make([]interface{}, n)
		for i := range list {
			p, err := decode(i)
			if err != nil {
				return err
			}
			list[i] = p
		}
		tm.StartTimer()
		err := t.Indexer.Replace(list, rv)
		tm.StopTimer()
		if err != nil {
			return fmt.Errorf("storebench: %s replace: %w", t.Name, err)
		}
		return nil
	}
	tm.StartTimer()
	r, err := t.ws.BeginReplace(ctx)
	tm.StopTimer()
	if err != nil {
		return fmt.Errorf("storebench: %s begin replace: %w", t.Name, err)
	}
	page := make([]interface{}, 0, t.pageSize)
	for start := 0; start < n; start += t.pageSize {
		page = page[:0]
		for i := start; i < min(start+t.pageSize, n); i++ {
			p, err := decode(i)
			if err != nil {
				_ = r.Abort()
				return err
			}
			page = append(page, p)
		}
		tm.StartTimer()
		err := r.Add(ctx, page...)
		tm.StopTimer()
		if err != nil {
			_ = r.Abort()
			return fmt.Errorf("storebench: %s replace page at %d: %w", t.Name, start, err)
		}
	}
	clear(page)
	tm.StartTimer()
	err = r.Commit(ctx, rv)
	tm.StopTimer()
	if err != nil {
		return fmt.Errorf("storebench: %s replace commit: %w", t.Name, err)
	}
	return nil
}
