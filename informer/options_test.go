package informer

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/reflector"
)

func TestNewValidatesOptions(t *testing.T) {
	st := newMemStore(t)
	for _, tc := range []struct {
		name string
		lw   cache.ListerWatcher
		opts Options
	}{
		{"no store", nopLW, Options{}},
		{"nil lister watcher", nil, Options{Store: st}},
		{"negative resync", nopLW, Options{Store: st, ResyncPeriod: -1}},
		{"negative capacity", nopLW, Options{Store: st, QueueCapacity: -1}},
		{"negative batch", nopLW, Options{Store: st, BatchSize: -1}},
		{"negative replay pending", nopLW, Options{Store: st, ReplayPending: -1}},
		{"negative parallelism", nopLW, Options{Store: st, ReplayParallelism: -1}},
		{"negative backoff", nopLW, Options{Store: st, ApplyBackoff: -1}},
		{"nil index function", nopLW, Options{Store: st, Indexers: cache.Indexers{"x": nil}}},
		{"bad reflector options", nopLW, Options{Store: st, Reflector: reflector.Options{ListPageSize: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.lw, &corev1.Pod{}, tc.opts); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("New: %v, want ErrInvalidOptions", err)
			}
		})
	}
	// Indexers are added to the store, once.
	inf, err := New(nopLW, &corev1.Pod{}, Options{Store: st, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inf.GetIndexer().GetIndexers()[cache.NamespaceIndex]; !ok {
		t.Fatal("index not added to the store")
	}
	if _, err := New(nopLW, &corev1.Pod{}, Options{Store: st, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}); err != nil {
		t.Fatalf("an index the store has already: %v", err)
	}
}

// TestDefaultQueueCapacityHoldsTwoBatches wants the default queue to hold
// two batches, one being applied while the next is queued, whatever the
// BatchSize: a larger batch than the default capacity would never fill.
func TestDefaultQueueCapacityHoldsTwoBatches(t *testing.T) {
	for _, tc := range []struct{ batch, capacity, want int }{
		{0, 0, DefaultQueueCapacity},
		{100, 0, DefaultQueueCapacity},
		{2000, 0, 4000},
		{DefaultQueueCapacity, 0, 2 * DefaultQueueCapacity},
		{2000, 300, 300},
	} {
		o, err := Options{Store: newMemStore(t), BatchSize: tc.batch, QueueCapacity: tc.capacity}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if o.QueueCapacity != tc.want {
			t.Errorf("BatchSize %d, QueueCapacity %d: default QueueCapacity %d, want %d", tc.batch, tc.capacity, o.QueueCapacity, tc.want)
		}
	}
}
