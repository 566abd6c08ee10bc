package bolt

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
)

// BenchmarkUpdateOne measures what an informer pays for a watch event that
// arrives alone, as on a real apiserver at tens to hundreds of updates a
// second: one updated pod (a new resourceVersion and a changed annotation,
// as a merge patch makes) per transaction, keys scattered as a watch
// delivers them, on a store holding pods=N podgen pods with the indexes a
// controller has (namespace and node name), the default options
// (SyncOnClose, the default hot tier). One op is one update:
//
//   - write: Apply of the one update and its resourceVersion;
//   - informer: what the informer does with the event, the read of the
//     stored state and old object (ReadStatesLike) then the Apply.
//
// Besides time, CPU and allocations per update it reports the garbage
// collections per 1,000 updates (gc/1k-op). Run with
//
//	go test -run '^$' -bench UpdateOne -benchmem -count 3 ./store/bolt/
func BenchmarkUpdateOne(b *testing.B) {
	for _, n := range []int{10000, 30000} {
		pods := podgen.Pods(n)
		slices.SortFunc(pods, func(a, b *corev1.Pod) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		list := make([]interface{}, n)
		for i, p := range pods {
			list[i] = p
		}
		for _, mode := range []string{"write", "informer"} {
			db := openDB(b, tempPath(b), Options{})
			s := openPods(b, db, controllerIndexers())
			must(b, s.Replace(list, strconv.Itoa(n)))
			b.Run(fmt.Sprintf("pods=%d/%s", n, mode), func(b *testing.B) {
				benchUpdateOne(b, s, pods, mode == "informer")
			})
			must(b, s.Close())
		}
	}
}

// controllerIndexers are the indexes of a controller of pods: namespace and
// node name.
func controllerIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"nodeName": func(obj interface{}) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		},
	}
}

// benchUpdateOne applies b.N updates of pods, one per transaction, to s,
// each read first with read.
func benchUpdateOne(b *testing.B, s *Store, pods []*corev1.Pod, read bool) {
	// Updated copies, made outside the timer, used in turn: each gets
	// its new resourceVersion before its write. That changes an object
	// the store was given 4,096 updates before (invariant 6 forbids it
	// to callers), which only the hot tier still holds: the figures do
	// not depend on it, and a copy per update would add its allocation.
	const copies = 4096
	updates := make([]*corev1.Pod, copies)
	for i := range updates {
		c := pods[(i*7919)%len(pods)].DeepCopy()
		c.Annotations = map[string]string{"churn/a": strconv.Itoa(i), "churn/b": "x"}
		updates[i] = c
	}
	ctx := context.Background()
	txns := make([]cache.Transaction, 1)
	keys := make([]string, 1)
	want := func(int, string) (bool, interface{}) { return true, nil }
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	gcs := ms.NumGC
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for i := 0; i < b.N; i++ {
		p := updates[i%copies]
		rv := strconv.Itoa(len(pods) + i + 1)
		p.ResourceVersion = rv
		if read {
			keys[0] = p.Namespace + "/" + p.Name
			if _, err := s.ReadStatesLike(keys, want); err != nil {
				b.Fatal(err)
			}
		}
		txns[0] = cache.Transaction{Type: cache.TransactionTypeUpdate, Object: p}
		if err := s.Apply(ctx, txns, rv); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, start)
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.NumGC-gcs)*1000/float64(b.N), "gc/1k-op")
}
