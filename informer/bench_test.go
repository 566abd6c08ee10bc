package informer

// The benchmarks' informers keep their relists' memory (KeepListMemory):
// a collection the process makes a second after a relist would fall in
// the next iterations' measurements.

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// BenchmarkWarmStartReplay measures the warm-start replay of a bbolt file
// of n generated pods to one handler: throughput, and the peak heap in use
// during the replay (sampled), which pacing keeps flat.
//
//	go test -run '^$' -bench WarmStartReplay -benchtime 3x ./informer
func BenchmarkWarmStartReplay(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			if testing.Short() && n > 10000 {
				b.Skip("large replay skipped in -short mode")
			}
			path := filepath.Join(b.TempDir(), "bench.db")
			writePods(b, path, n)
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapInuse
			var peak uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if p := replayOnce(b, path, n); p > peak {
					peak = p
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
			b.ReportMetric(float64(peak-min(base, peak))/(1<<20), "peak-heap-MB")
			b.ReportMetric(heldHeap(b, path)/(1<<20), "all-in-heap-MB")
		})
	}
}

// heldHeap returns the heap that holding every object of the file takes,
// as a client-go informer's cache would: the figure replay pacing avoids.
func heldHeap(b *testing.B, path string) float64 {
	db, st := openBench(b, path)
	defer db.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	objs := st.List()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(objs)
	return float64(ms.HeapInuse - min(base, ms.HeapInuse))
}

func openBench(b *testing.B, path string) (*bolt.DB, *bolt.Store) {
	b.Helper()
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync, Logger: klog.Background().V(10)})
	if err != nil {
		b.Fatal(err)
	}
	c, err := codec.For(nil, podGVK)
	if err != nil {
		b.Fatal(err)
	}
	st, err := db.Resource(ctx, bolt.ResourceOptions{Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"}, Codec: c})
	if err != nil {
		b.Fatal(err)
	}
	return db, st
}

func writePods(b *testing.B, path string, n int) {
	b.Helper()
	db, st := openBench(b, path)
	defer db.Close()
	r, err := st.BeginReplace(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	page := make([]interface{}, 0, 1000)
	for i := 0; i < n; i++ {
		page = append(page, podgen.Pod(i))
		if len(page) == cap(page) || i == n-1 {
			if err := r.Add(context.Background(), page...); err != nil {
				b.Fatal(err)
			}
			page = page[:0]
		}
	}
	if err := r.Commit(context.Background(), strconv.Itoa(n+1)); err != nil {
		b.Fatal(err)
	}
}

// replayOnce opens the file, replays it to a handler and returns the peak
// heap in use seen while doing so.
func replayOnce(b *testing.B, path string, n int) uint64 {
	db, st := openBench(b, path)
	defer db.Close()
	logger := klog.Background().V(10)
	inf, err := New(nopLW, nil, Options{Store: st, Logger: &logger, KeepListMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	var count atomic.Int64
	done := make(chan struct{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(interface{}, bool) {
		if count.Add(1) == int64(n) {
			close(done)
		}
	}}); err != nil {
		b.Fatal(err)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	})
	q, err := inf.start(logger)
	if err != nil {
		b.Fatal(err)
	}
	// No reflector, so no resume check and nothing to catch up: the
	// replay starts at once.
	inf.resume.decide(startResumed)
	inf.proc.run()
	l := newLoop(inf, q, logger)
	if err := l.warmStart(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := l.caughtUp(context.Background()); err != nil {
		b.Fatal(err)
	}
	<-done
	close(stop)
	wg.Wait()
	inf.stop()
	if got := count.Load(); got != int64(n) {
		b.Fatal(fmt.Sprintf("replayed %d of %d", got, n))
	}
	return peak.Load()
}

// BenchmarkApplyDeltas measures the live-event path on a bbolt file with
// the store's default sync policy: n pod updates pushed into the
// queue and applied in batches of at most BatchSize keys (one transaction
// each), with one handler. Every update is for a distinct key, so nothing
// is coalesced: it shows what group commit buys.
//
//	go test -run '^$' -bench ApplyDeltas -benchtime 2x ./informer
func BenchmarkApplyDeltas(b *testing.B) {
	const n = 5000
	for _, batch := range []int{1, 50, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "apply.db")
				ctx := context.Background()
				db, err := bolt.Open(ctx, path, bolt.Options{Logger: klog.Background().V(10)})
				if err != nil {
					b.Fatal(err)
				}
				c, _ := codec.For(nil, podGVK)
				st, err := db.Resource(ctx, bolt.ResourceOptions{Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"}, Codec: c})
				if err != nil {
					b.Fatal(err)
				}
				logger := klog.Background().V(10)
				inf, err := New(nopLW, nil, Options{Store: st, Logger: &logger, BatchSize: batch, QueueCapacity: 2 * n, KeepListMemory: true})
				if err != nil {
					b.Fatal(err)
				}
				var count atomic.Int64
				done := make(chan struct{})
				if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ interface{}) {
					if count.Add(1) == n {
						close(done)
					}
				}}); err != nil {
					b.Fatal(err)
				}
				q, err := inf.start(logger)
				if err != nil {
					b.Fatal(err)
				}
				// Prefilled with Apply, not Replace: the store is not
				// complete, so no warm-start replay runs in the timed part.
				txns := make([]cache.Transaction, 0, n)
				for k := 0; k < n; k++ {
					txns = append(txns, cache.Transaction{Type: cache.TransactionTypeAdd, Object: podgen.Pod(k)})
				}
				if err := st.Apply(ctx, txns, "10000"); err != nil {
					b.Fatal(err)
				}
				// Queue everything first, so that batches are full.
				for k := 0; k < n; k++ {
					p := podgen.Pod(k)
					p.ResourceVersion = strconv.Itoa(10001 + k)
					if err := q.Update(ctx, p); err != nil {
						b.Fatal(err)
					}
				}
				inf.proc.run()
				lctx, cancel := context.WithCancel(ctx)
				loopDone := make(chan struct{})
				b.StartTimer()
				go func() { defer close(loopDone); newLoop(inf, q, logger).run(lctx) }()
				<-done
				b.StopTimer()
				cancel()
				<-loopDone
				inf.stop()
				_ = db.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkColdStartRelist measures a cold start of n generated pods into
// a bbolt file: pages of 500 pushed into the queue as a reflector would,
// filled into the store and told to one handler page by page (cpu-s/op is
// the process's CPU time per cold start, GC included). The peak heap is bounded
// by the queue's capacity (listed objects queued), not by n.
//
//	go test -run '^$' -bench ColdStartRelist -benchtime 1x ./informer
func BenchmarkColdStartRelist(b *testing.B) {
	const n = 50000
	for _, capacity := range []int{DefaultQueueCapacity, 10000} {
		b.Run(fmt.Sprintf("capacity=%d", capacity), func(b *testing.B) {
			if testing.Short() {
				b.Skip("large relist skipped in -short mode")
			}
			var peak uint64
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapInuse
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				if p := coldStartOnce(b, filepath.Join(b.TempDir(), "cold.db"), n, capacity); p > peak {
					peak = p
				}
			}
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
			b.ReportMetric(float64(peak-min(base, peak))/(1<<20), "peak-heap-MB")
		})
	}
}

// cpuTime returns the CPU time (user and system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func coldStartOnce(b *testing.B, path string, n, capacity int) uint64 {
	db, st := openBench(b, path)
	defer db.Close()
	logger := klog.Background().V(10)
	inf, err := New(nopLW, nil, Options{Store: st, Logger: &logger, QueueCapacity: capacity, KeepListMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	var count atomic.Int64
	done := make(chan struct{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(interface{}, bool) {
		if count.Add(1) == int64(n) {
			close(done)
		}
	}}); err != nil {
		b.Fatal(err)
	}
	q, err := inf.start(logger)
	if err != nil {
		b.Fatal(err)
	}
	inf.proc.run()
	ctx, cancel := context.WithCancel(context.Background())
	var peak atomic.Uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	})
	wg.Go(func() { newLoop(inf, q, logger).run(ctx) })
	if err := q.BeginReplace(ctx); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 500 {
		page := make([]interface{}, 0, 500)
		for k := i; k < min(i+500, n); k++ {
			page = append(page, podgen.Pod(k))
		}
		if err := q.ReplacePage(ctx, page); err != nil {
			b.Fatal(err)
		}
	}
	if err := q.EndReplace(ctx, strconv.Itoa(n+1)); err != nil {
		b.Fatal(err)
	}
	<-done
	cancel()
	q.Close()
	wg.Wait()
	inf.stop()
	return peak.Load()
}
