package informer

// Port of client-go's tools/cache/processor_listener_test.go at v0.36.3
// (BenchmarkListener): notifications added from concurrent goroutines to
// one listener, delivered by its goroutine. The store is not involved.
//
// Adapted: client-go's processorListener has an add channel, a pop
// goroutine and a run goroutine, and a mock for the informer's
// HasSynced; this package's listener has one delivering goroutine fed by
// add (an unbounded buffer), stopped by stop.

import (
	"sync"
	"testing"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const concurrencyLevel = 5

func BenchmarkClientGoListener(b *testing.B) {
	n := note{kind: noteAdd}

	var swg sync.WaitGroup
	swg.Add(b.N)
	b.SetParallelism(concurrencyLevel)
	pl := newListener(klog.Background(), &cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			swg.Done()
		},
	}, "bench", 0, 0, clock.RealClock{})
	var wg sync.WaitGroup
	defer wg.Wait() // Wait for the delivering goroutine to stop
	defer pl.stop() // Tell it to stop
	pl.start(&wg)

	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pl.add(n)
		}
	})
	swg.Wait() // Block until all notifications have been received
	b.StopTimer()
}
