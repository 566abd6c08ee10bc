package bolt

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
)

// Benchmarks of the bbolt store side by side with client-go's
// cache.NewIndexer, on podgen pods (about 8 KB of JSON each) with the
// namespace index. Run with
//
//	go test -run '^$' -bench . -benchmem ./store/bolt/
//
// The package documentation records the figures.

const benchPods = 10000

// benchStore is what the benchmarks need of both stores.
type benchStore interface {
	cache.Indexer
}

type benchTarget struct {
	name string
	open func(b *testing.B, sync SyncPolicy) benchStore
	// apply writes a batch, as the informer does.
	apply func(s benchStore, txns []cache.Transaction, rv string) error
}

var benchTargets = []benchTarget{
	{
		name: "bolt",
		open: func(b *testing.B, sync SyncPolicy) benchStore {
			db := openDB(b, tempPath(b), Options{Sync: sync})
			return openPods(b, db, namespaceIndexers())
		},
		apply: func(s benchStore, txns []cache.Transaction, rv string) error {
			return s.(*Store).Apply(context.Background(), txns, rv)
		},
	},
	{
		name: "client-go",
		open: func(*testing.B, SyncPolicy) benchStore {
			return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, namespaceIndexers())
		},
		apply: func(s benchStore, txns []cache.Transaction, rv string) error {
			if err := s.(cache.TransactionStore).Transaction(txns...); err != nil {
				return err
			}
			return nil
		},
	},
}

// benchPodList returns the benchmark pods in key order, as the apiserver
// lists them, generated once on first use (not at init: child processes of
// the tests start from this binary).
var benchPodList = sync.OnceValue(func() []*corev1.Pod {
	pods := podgen.Pods(benchPods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return pods
})

func benchFill(b *testing.B, s benchStore) {
	b.Helper()
	list := make([]interface{}, len(benchPodList()))
	for i, p := range benchPodList() {
		list[i] = p
	}
	if err := s.Replace(list, strconv.Itoa(benchPods)); err != nil {
		b.Fatal(err)
	}
}

// cpuTime returns the CPU time the process used so far. The benchmarks
// report it per operation (cpu-ns/op) beside the wall time, which on a
// shared machine also counts the time other processes held the CPU.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time used since start per operation.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkApply measures batched writes (updates of stored pods) per
// object, for batch sizes and sync policies.
func BenchmarkApply(b *testing.B) {
	for _, tgt := range benchTargets {
		for _, sync := range []SyncPolicy{SyncOnClose, SyncFull, SyncNoFreelist, UnsafeNoSync} {
			if tgt.name == "client-go" && sync != SyncOnClose {
				continue
			}
			for _, batch := range []int{1, 10, 100, 500, 1000} {
				name := fmt.Sprintf("%s/batch=%d", tgt.name, batch)
				if tgt.name == "bolt" {
					name = fmt.Sprintf("%s/%v/batch=%d", tgt.name, sync, batch)
				}
				s := tgt.open(b, sync)
				benchFill(b, s)
				// Updated copies with new RVs, prepared outside the timer.
				updates := make([]*corev1.Pod, benchPods)
				for i, p := range benchPodList() {
					c := p.DeepCopy()
					c.ResourceVersion = strconv.Itoa(benchPods + i + 1)
					updates[i] = c
				}
				b.Run(name, func(b *testing.B) {
					txns := make([]cache.Transaction, batch)
					runtime.GC()
					b.ReportAllocs()
					b.ResetTimer()
					defer reportCPU(b, cpuTime())
					// One op is one pod: b.N pods in all, the last batch
					// short, so that per-op figures are per pod for any b.N.
					for n := 0; n < b.N; n += batch {
						k := min(batch, b.N-n)
						for j := range txns[:k] {
							// Scattered keys, as a watch delivers them.
							txns[j] = cache.Transaction{Type: cache.TransactionTypeUpdate, Object: updates[((n+j)*7919)%benchPods]}
						}
						if err := tgt.apply(s, txns[:k], strconv.Itoa(n)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkGetByKey measures point reads of stored pods and reports the
// median and 99th percentile latency: keys=all reads all pods uniformly (the
// decoded-object cache rarely helps: every read decodes), keys=hot reads a
// working set of 200 pods (as a controller reconciling a few objects does).
func BenchmarkGetByKey(b *testing.B) {
	for _, tgt := range benchTargets {
		s := tgt.open(b, UnsafeNoSync)
		benchFill(b, s)
		keys := make([]string, benchPods)
		for i, p := range benchPodList() {
			keys[i] = p.Namespace + "/" + p.Name
		}
		for _, set := range []struct {
			name string
			n    int
		}{{"all", benchPods}, {"hot", 200}} {
			b.Run(tgt.name+"/keys="+set.name, func(b *testing.B) {
				lat := make([]time.Duration, 0, min(b.N, 1<<20))
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				defer reportCPU(b, cpuTime())
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if _, ok, err := s.GetByKey(keys[(i*7919)%set.n]); !ok || err != nil {
						b.Fatal(ok, err)
					}
					if len(lat) < cap(lat) {
						lat = append(lat, time.Since(start))
					}
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			})
		}
	}
}

// BenchmarkByIndexNamespace measures ByIndex(namespace), which returns
// benchPods/podgen.Namespaces (200) pods.
func BenchmarkByIndexNamespace(b *testing.B) {
	for _, tgt := range benchTargets {
		s := tgt.open(b, UnsafeNoSync)
		benchFill(b, s)
		b.Run(tgt.name, func(b *testing.B) {
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPU(b, cpuTime())
			for i := 0; i < b.N; i++ {
				objs, err := s.ByIndex(cache.NamespaceIndex, fmt.Sprintf("ns-%03d", i%podgen.Namespaces))
				if err != nil || len(objs) != benchPods/podgen.Namespaces {
					b.Fatal(len(objs), err)
				}
			}
		})
	}
}

// BenchmarkReplace measures a relist of benchPods pods over a store holding
// them already (cache.Store's Replace: pages of 1000, one transaction each).
func BenchmarkReplace(b *testing.B) {
	for _, tgt := range benchTargets {
		for _, sync := range []SyncPolicy{SyncOnClose, SyncFull, UnsafeNoSync} {
			if tgt.name == "client-go" && sync != SyncOnClose {
				continue
			}
			name := tgt.name
			if tgt.name == "bolt" {
				name += "/" + sync.String()
			}
			s := tgt.open(b, sync)
			benchFill(b, s)
			list := make([]interface{}, len(benchPodList()))
			for i, p := range benchPodList() {
				list[i] = p
			}
			b.Run(name, func(b *testing.B) {
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				defer reportCPU(b, cpuTime())
				for i := 0; i < b.N; i++ {
					if err := s.Replace(list, strconv.Itoa(benchPods+i)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCommit measures the fixed cost of a commit per sync policy: a
// bookmark (the RV in the meta, nothing else) on a file holding benchPods
// pods after a relist, whose freed generation leaves a long freelist that
// SyncFull rewrites at every commit.
func BenchmarkCommit(b *testing.B) {
	for _, sync := range []SyncPolicy{SyncOnClose, SyncFull, SyncNoFreelist, UnsafeNoSync} {
		s := benchTargets[0].open(b, sync).(*Store)
		benchFill(b, s)
		benchFill(b, s) // a relist: the first generation is freed
		b.Run(sync.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPU(b, cpuTime())
			for i := 0; i < b.N; i++ {
				if err := s.Apply(context.Background(), nil, strconv.Itoa(i+1)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpen measures Open and Resource of a file holding benchPods pods
// per sync policy: SyncNoFreelist rebuilds the freelist by reading every
// page of the file.
func BenchmarkOpen(b *testing.B) {
	for _, sync := range []SyncPolicy{SyncOnClose, SyncFull, SyncNoFreelist} {
		path := tempPath(b)
		db, err := Open(context.Background(), path, Options{Sync: sync})
		if err != nil {
			b.Fatal(err)
		}
		s := openPods(b, db, namespaceIndexers())
		benchFill(b, s)
		benchFill(b, s)
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.Run(sync.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				db, err := Open(context.Background(), path, Options{Sync: sync})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()}); err != nil {
					b.Fatal(err)
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
