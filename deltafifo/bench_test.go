package deltafifo_test

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// The throughput benchmarks push b.N Update events from one goroutine and
// pop them from another, for warmcache's queue and, on the same events,
// client-go's RealFIFO (PopBatch, as the InOrderInformersBatchProcess
// informer does) and DeltaFIFO (Pop). They report events/s. "hot" cycles
// over 100 keys (deltas coalesce per key), "spread" over 20000 keys.
//
//	go test -run '^$' -bench . -benchmem ./deltafifo/

var benchShapes = []struct {
	name string
	keys int
}{{"hot", 100}, {"spread", 20000}}

func benchPods(keys int) []*corev1.Pod {
	pods := make([]*corev1.Pod, keys)
	for i := range pods {
		pods[i] = testkit.Pod("p"+strconv.Itoa(i), strconv.Itoa(i+1))
	}
	return pods
}

func reportEventsPerSecond(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkThroughput(b *testing.B) {
	ctx := context.Background()
	for _, shape := range benchShapes {
		pods := benchPods(shape.keys)

		b.Run("warmcache/"+shape.name, func(b *testing.B) {
			q, err := deltafifo.New(deltafifo.Options{})
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan int)
			go func() {
				got := 0
				for got < b.N {
					batch, err := q.Pop(ctx, 1000)
					if err != nil {
						break
					}
					for _, ds := range batch.Deltas {
						got += len(ds)
					}
				}
				done <- got
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := q.Update(ctx, pods[i%len(pods)]); err != nil {
					b.Fatal(err)
				}
			}
			if got := <-done; got != b.N {
				b.Fatalf("popped %d deltas, want %d", got, b.N)
			}
			reportEventsPerSecond(b)
			q.Close()
		})

		b.Run("client-go-RealFIFO/"+shape.name, func(b *testing.B) {
			q := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
				KeyFunction:  cache.DeletionHandlingMetaNamespaceKeyFunc,
				KnownObjects: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc),
			})
			done := make(chan int)
			go func() {
				got := 0
				for got < b.N {
					err := q.PopBatch(
						func(deltas []cache.Delta, _ bool) error { got += len(deltas); return nil },
						func(obj interface{}, _ bool) error { got += len(obj.(cache.Deltas)); return nil })
					if err != nil {
						break
					}
				}
				done <- got
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := q.Update(pods[i%len(pods)]); err != nil {
					b.Fatal(err)
				}
			}
			if got := <-done; got != b.N {
				b.Fatalf("popped %d deltas, want %d", got, b.N)
			}
			reportEventsPerSecond(b)
			q.Close()
		})

		b.Run("client-go-DeltaFIFO/"+shape.name, func(b *testing.B) {
			q := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
				KeyFunction:           cache.DeletionHandlingMetaNamespaceKeyFunc,
				EmitDeltaTypeReplaced: true,
			})
			done := make(chan int)
			go func() {
				got := 0
				for got < b.N {
					_, err := q.Pop(func(obj interface{}, _ bool) error {
						got += len(obj.(cache.Deltas))
						return nil
					})
					if err != nil {
						break
					}
				}
				done <- got
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := q.Update(pods[i%len(pods)]); err != nil {
					b.Fatal(err)
				}
			}
			if got := <-done; got != b.N {
				b.Fatalf("popped %d deltas, want %d", got, b.N)
			}
			reportEventsPerSecond(b)
			q.Close()
		})
	}
}
