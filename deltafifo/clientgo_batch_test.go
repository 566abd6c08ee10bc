package deltafifo_test

// This file ports client-go's tools/cache/the_real_fifo_test.go at v0.36.3,
// TestRealFIFO_PopMultipleDeltaInBatch: batched pops (RealFIFO.PopBatch
// with batchSize; ours Pop(ctx, max)). Adapted:
//
//   - the relist is popped as a replace segment (begin, pages of at most
//     max objects, end), each batch flagged initial, instead of Replaced
//     deltas; pages are never merged with the deltas after them;
//   - RealFIFO keeps one delta per event and ends a batch at a key that is
//     already in it; ours accumulates a key's deltas as DeltaFIFO does, so
//     a batch holds each key once with all its deltas, and a key updated
//     twice is one key with two deltas, not two batches;
//   - client-go waits 50ms for a batch that may not come; ours pops what
//     was queued after Close (popAll).

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
)

func TestRealFIFO_PopMultipleDeltaInBatch(t *testing.T) {
	ctx := context.Background()
	const unlimitedBatchSize = 999999
	obj1 := mkFifoObj("foo1", 5)
	obj2 := mkFifoObj("foo2", 5)
	obj3 := mkFifoObj("foo3", 5)
	obj4 := mkFifoObj("foo4", 5)
	update := func(o testFifoObject) func(*testing.T, *deltafifo.Queue) {
		return func(t *testing.T, q *deltafifo.Queue) { must(t, q.Update(ctx, o)) }
	}
	updated := func(o testFifoObject, n int) cache.Deltas {
		d := cache.Deltas{}
		for i := 0; i < n; i++ {
			d = append(d, cache.Delta{Type: cache.Updated, Object: o})
		}
		return d
	}
	page := func(objs ...testFifoObject) popped {
		p := popped{Kind: deltafifo.KindReplacePage, Initial: true}
		for _, o := range objs {
			p.Objects = append(p.Objects, o)
		}
		return p
	}
	begin := popped{Kind: deltafifo.KindReplaceBegin, Initial: true}
	end := popped{Kind: deltafifo.KindReplaceEnd, Initial: true}
	testCases := []struct {
		name            string
		initialItems    []testFifoObject
		actions         []func(*testing.T, *deltafifo.Queue)
		batchSize       int
		expectedBatches []popped
	}{{
		name:            "non-split: pop unique items should work",
		initialItems:    []testFifoObject{obj1, obj2, obj3},
		batchSize:       unlimitedBatchSize,
		expectedBatches: []popped{begin, page(obj1, obj2, obj3), end},
	}, {
		name:         "split due to initial list: initial 2 items with 2 updates should have 2 batches",
		initialItems: []testFifoObject{obj1, obj2},
		actions:      ops(update(obj3), update(obj4)),
		batchSize:    2,
		expectedBatches: []popped{
			begin, page(obj1, obj2), end,
			deltasBatch([]string{"foo3", "foo4"}, updated(obj3, 1), updated(obj4, 1)),
		},
	}, {
		name:         "non-unique: updates of one key accumulate into one key",
		initialItems: []testFifoObject{obj1},
		actions:      ops(update(obj1), update(obj1)),
		batchSize:    unlimitedBatchSize,
		expectedBatches: []popped{
			begin, page(obj1), end,
			deltasBatch([]string{"foo1"}, updated(obj1, 2)),
		},
	}, {
		name:         "non-unique at the end: the list and the updates are separate batches",
		initialItems: []testFifoObject{obj1, obj2},
		actions:      ops(update(obj2), update(obj3)),
		batchSize:    unlimitedBatchSize,
		expectedBatches: []popped{
			begin, page(obj1, obj2), end,
			deltasBatch([]string{"foo2", "foo3"}, updated(obj2, 1), updated(obj3, 1)),
		},
	}, {
		name:         "non-unique in the middle: the list and the update are separate batches",
		initialItems: []testFifoObject{obj1, obj2, obj3},
		actions:      ops(update(obj2)),
		batchSize:    unlimitedBatchSize,
		expectedBatches: []popped{
			begin, page(obj1, obj2, obj3), end,
			deltasBatch([]string{"foo2"}, updated(obj2, 1)),
		},
	}, {
		name:            "split due to batch size#1: batching initial list should work",
		initialItems:    []testFifoObject{obj1, obj2, obj3},
		batchSize:       2,
		expectedBatches: []popped{begin, page(obj1, obj2), page(obj3), end},
	}, {
		name:         "split due to batch size#2: batching incoming non-initial deltas should work",
		initialItems: []testFifoObject{},
		actions:      ops(update(obj1), update(obj2), update(obj3)),
		batchSize:    2,
		expectedBatches: []popped{
			begin, end,
			deltasBatch([]string{"foo1", "foo2"}, updated(obj1, 1), updated(obj2, 1)),
			deltasBatch([]string{"foo3"}, updated(obj3, 1)),
		},
	}, {
		name:         "split due to batch size#3: pop 4 mixed initial & non-initial items with 2 batch size should have 3 batch",
		initialItems: []testFifoObject{obj1, obj2, obj3},
		actions:      ops(update(obj4)),
		batchSize:    2,
		expectedBatches: []popped{
			begin, page(obj1, obj2), page(obj3), end,
			deltasBatch([]string{"foo4"}, updated(obj4, 1)),
		},
	}}

	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			q := newFifo(t, func() []testFifoObject { return tc.initialItems }, deltafifo.Options{})
			initialItems := make([]interface{}, len(tc.initialItems))
			for i, item := range tc.initialItems {
				initialItems[i] = item
			}
			replace(t, q, initialItems, "123")
			for _, action := range tc.actions {
				action(t, q)
			}
			got := popAll(t, q, tc.batchSize)
			if !reflect.DeepEqual(got, tc.expectedBatches) {
				t.Errorf("popped\n%#v\nwant\n%#v", got, tc.expectedBatches)
			}
			// Every initial item, and nothing else, is popped flagged
			// initial, in list order.
			var initial []testFifoObject
			for _, b := range got {
				if !b.Initial {
					continue
				}
				for _, o := range b.Objects {
					initial = append(initial, o.(testFifoObject))
				}
				for _, d := range b.Deltas {
					for _, x := range d {
						initial = append(initial, x.Object.(testFifoObject))
					}
				}
			}
			if len(initial) != 0 || len(tc.initialItems) != 0 {
				if !reflect.DeepEqual(initial, tc.initialItems) {
					t.Errorf("initial items %v, want %v", initial, tc.initialItems)
				}
			}
		})
	}
}
