package deltafifo_test

// This file ports the relist and HasSynced tests of client-go's
// tools/cache/delta_fifo_test.go at v0.36.3 (and the ordering of
// the_real_fifo_test.go's TestRealFIFO_ReplaceAtomic, whose atomic replace
// is the closest to ours). Adapted:
//
//   - client-go's Replace(list, rv) is BeginReplace, one ReplacePage and
//     EndReplace(rv) (replace in clientgo_helpers_test.go);
//   - client-go's DeltaFIFO turns a Replace into Sync (or, with
//     EmitDeltaTypeReplaced, Replaced) deltas for the listed objects and
//     Deleted deltas carrying cache.DeletedFinalStateUnknown for the keys
//     that are queued or in KnownObjects but not listed. Ours queues the
//     relist as a replace segment, after every delta pushed before it
//     (package doc, "Differences from client-go"): the consumer's store
//     replace finds the vanished keys, so the queue has no
//     EmitDeltaTypeReplaced option and never reads KnownObjects on a
//     relist. Each case therefore checks the popped batches, and then
//     feeds them to refConsumer, a model of the consumer whose store
//     starts as KnownObjects, which derives client-go's deltas from them;
//     the per-key Deltas must be client-go's expected ones (objects,
//     types, order, tombstones with the newest state). Keys are compared
//     per key: across a relist ours delivers the earlier deltas first;
//   - HasSynced becomes true when the replace's end is popped (package
//     doc, "Initial sync"), not when the last listed item is: an empty
//     initial list is synced once its end is popped, not at once.

import (
	"context"
	"reflect"
	"sort"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
)

// refConsumer applies popped batches to a map standing for the consumer's
// store, starting from KnownObjects, and records per key the deltas
// client-go's DeltaFIFO would have queued: the deltas as popped; for a
// relist, a Sync (Replaced when emitReplaced) delta per listed object and
// a Deleted delta with a cache.DeletedFinalStateUnknown holding the
// stored state for every stored key that was not listed.
type refConsumer struct {
	emitReplaced bool
	store        map[string]testFifoObject
	staged       map[string]testFifoObject
	order        []string // staged keys in list order
	deltas       map[string]cache.Deltas
}

func newRefConsumer(known []testFifoObject, emitReplaced bool) *refConsumer {
	c := &refConsumer{emitReplaced: emitReplaced, store: map[string]testFifoObject{}, deltas: map[string]cache.Deltas{}}
	for _, o := range known {
		c.store[o.name] = o
	}
	return c
}

func (c *refConsumer) apply(t *testing.T, batches []popped) {
	t.Helper()
	for _, b := range batches {
		switch b.Kind {
		case deltafifo.KindDeltas:
			for i, k := range b.Keys {
				for _, d := range b.Deltas[i] {
					c.deltas[k] = append(c.deltas[k], d)
					switch d.Type {
					case cache.Added, cache.Updated:
						c.store[k] = d.Object.(testFifoObject)
					case cache.Deleted:
						delete(c.store, k)
					}
				}
			}
		case deltafifo.KindReplaceBegin:
			c.staged, c.order = map[string]testFifoObject{}, nil
		case deltafifo.KindReplacePage:
			for _, o := range b.Objects {
				f := o.(testFifoObject)
				if _, dup := c.staged[f.name]; !dup {
					c.order = append(c.order, f.name)
				}
				c.staged[f.name] = f
			}
		case deltafifo.KindReplaceEnd:
			typ := cache.Sync
			if c.emitReplaced {
				typ = cache.Replaced
			}
			for _, k := range c.order {
				c.deltas[k] = append(c.deltas[k], cache.Delta{Type: typ, Object: c.staged[k]})
			}
			var gone []string
			for k := range c.store {
				if _, ok := c.staged[k]; !ok {
					gone = append(gone, k)
				}
			}
			sort.Strings(gone)
			for _, k := range gone {
				c.deltas[k] = append(c.deltas[k], cache.Delta{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: k, Obj: c.store[k]}})
			}
			c.store, c.staged = c.staged, nil
		default:
			t.Fatalf("unexpected batch %v", b.Kind)
		}
	}
}

// checkDeltas compares the consumer's per-key deltas with client-go's.
func (c *refConsumer) checkDeltas(t *testing.T, want map[string]cache.Deltas) {
	t.Helper()
	if !reflect.DeepEqual(c.deltas, want) {
		t.Errorf("deltas per key:\n%#v\nclient-go's:\n%#v", c.deltas, want)
	}
}

// TestDeltaFIFO_replaceWithDeleteDeltaIn checks that an object listed
// after a queued Delete of its key reaches the consumer after the delete
// (kubernetes/kubernetes#83810: the informer must not miss its creation).
func TestDeltaFIFO_replaceWithDeleteDeltaIn(t *testing.T) {
	ctx := context.Background()
	oldObj := mkFifoObj("foo", 1)
	newObj := mkFifoObj("foo", 2)
	known := []testFifoObject{oldObj}
	q := newFifo(t, func() []testFifoObject { return known }, deltafifo.Options{})

	must(t, q.Delete(ctx, oldObj))
	replace(t, q, []interface{}{newObj}, "")

	got := popAll(t, q, 10)
	want := concat(
		[]popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Deleted, Object: oldObj}})},
		replaceBatches(false, []interface{}{newObj}),
	)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("popped\n%#v\nwant\n%#v", got, want)
	}
	c := newRefConsumer(known, false)
	c.apply(t, got)
	c.checkDeltas(t, map[string]cache.Deltas{"foo": {
		{Type: cache.Deleted, Object: oldObj},
		{Type: cache.Sync, Object: newObj},
	}})
}

func TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue(t *testing.T) {
	ctx := context.Background()
	obj := mkFifoObj("foo", 2)
	objV2 := mkFifoObj("foo", 3)
	table := []struct {
		name           string
		emitReplaced   bool
		operations     func(t *testing.T, q *deltafifo.Queue)
		expectedPops   []popped
		expectedDeltas cache.Deltas
	}{
		{
			name: "Added object should be deleted on Replace",
			operations: func(t *testing.T, q *deltafifo.Queue) {
				must(t, q.Add(ctx, obj))
				replace(t, q, []interface{}{}, "0")
			},
			expectedPops: concat(
				[]popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Added, Object: obj}})},
				replaceBatches(false),
			),
			expectedDeltas: cache.Deltas{
				{Type: cache.Added, Object: obj},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "foo", Obj: obj}},
			},
		},
		{
			name:         "Replaced object should have only a single Delete",
			emitReplaced: true,
			operations: func(t *testing.T, q *deltafifo.Queue) {
				must(t, q.Add(ctx, obj))
				replace(t, q, []interface{}{obj}, "0")
				replace(t, q, []interface{}{}, "0")
			},
			expectedPops: concat(
				[]popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Added, Object: obj}})},
				replaceBatches(false, []interface{}{obj}),
				replaceBatches(false),
			),
			expectedDeltas: cache.Deltas{
				{Type: cache.Added, Object: obj},
				{Type: cache.Replaced, Object: obj},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "foo", Obj: obj}},
			},
		},
		{
			name: "Deleted object should have only a single Delete",
			operations: func(t *testing.T, q *deltafifo.Queue) {
				must(t, q.Add(ctx, obj))
				must(t, q.Delete(ctx, obj))
				replace(t, q, []interface{}{}, "0")
			},
			expectedPops: concat(
				[]popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Added, Object: obj}, {Type: cache.Deleted, Object: obj}})},
				replaceBatches(false),
			),
			expectedDeltas: cache.Deltas{
				{Type: cache.Added, Object: obj},
				{Type: cache.Deleted, Object: obj},
			},
		},
		{
			name: "Synced objects should have a single delete",
			operations: func(t *testing.T, q *deltafifo.Queue) {
				must(t, q.Add(ctx, obj))
				replace(t, q, []interface{}{obj}, "0")
				replace(t, q, []interface{}{obj}, "0")
				replace(t, q, []interface{}{}, "0")
			},
			expectedPops: concat(
				[]popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Added, Object: obj}})},
				replaceBatches(false, []interface{}{obj}),
				replaceBatches(false, []interface{}{obj}),
				replaceBatches(false),
			),
			expectedDeltas: cache.Deltas{
				{Type: cache.Added, Object: obj},
				{Type: cache.Sync, Object: obj},
				{Type: cache.Sync, Object: obj},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "foo", Obj: obj}},
			},
		},
		{
			name: "Added objects should have a single delete on multiple Replaces",
			operations: func(t *testing.T, q *deltafifo.Queue) {
				must(t, q.Add(ctx, obj))
				replace(t, q, []interface{}{}, "0")
				replace(t, q, []interface{}{}, "1")
			},
			expectedPops: concat(
				[]popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Added, Object: obj}})},
				replaceBatches(false),
				replaceBatches(false),
			),
			expectedDeltas: cache.Deltas{
				{Type: cache.Added, Object: obj},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "foo", Obj: obj}},
			},
		},
		{
			name: "Added and deleted and added object should be deleted",
			operations: func(t *testing.T, q *deltafifo.Queue) {
				must(t, q.Add(ctx, obj))
				must(t, q.Delete(ctx, obj))
				must(t, q.Add(ctx, objV2))
				replace(t, q, []interface{}{}, "0")
			},
			expectedPops: concat(
				[]popped{deltasBatch([]string{"foo"}, cache.Deltas{
					{Type: cache.Added, Object: obj}, {Type: cache.Deleted, Object: obj}, {Type: cache.Added, Object: objV2},
				})},
				replaceBatches(false),
			),
			expectedDeltas: cache.Deltas{
				{Type: cache.Added, Object: obj},
				{Type: cache.Deleted, Object: obj},
				{Type: cache.Added, Object: objV2},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "foo", Obj: objV2}},
			},
		},
	}
	for _, tt := range table {
		t.Run(tt.name, func(t *testing.T) {
			// With and without a backing KnownObjects: the queue does not
			// read it on a relist, so both pop the same batches.
			for _, known := range []literalListerGetter{func() []testFifoObject { return []testFifoObject{} }, nil} {
				q := newFifo(t, known, deltafifo.Options{})
				tt.operations(t, q)
				got := popAll(t, q, 10)
				if !reflect.DeepEqual(got, tt.expectedPops) {
					t.Fatalf("popped\n%#v\nwant\n%#v", got, tt.expectedPops)
				}
				if n := q.Depth(); n != 0 {
					t.Errorf("expected no extra deltas, depth %d", n)
				}
				c := newRefConsumer(nil, tt.emitReplaced)
				c.apply(t, got)
				c.checkDeltas(t, map[string]cache.Deltas{"foo": tt.expectedDeltas})
			}
		})
	}
}

func TestDeltaFIFO_addReplace(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, nil, deltafifo.Options{})
	must(t, q.Add(ctx, mkFifoObj("foo", 10)))
	replace(t, q, []interface{}{mkFifoObj("foo", 15)}, "0")

	got := popAll(t, q, 10)
	want := concat(
		[]popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Added, Object: mkFifoObj("foo", 10)}})},
		replaceBatches(false, []interface{}{mkFifoObj("foo", 15)}),
	)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("popped\n%#v\nwant\n%#v", got, want)
	}
	// client-go pops foo once, its newest state 15; the consumer ends
	// with 15 too, and nothing is left.
	c := newRefConsumer(nil, false)
	c.apply(t, got)
	if e, a := 15, c.store["foo"].val; e != a {
		t.Errorf("Didn't get updated value (%v), got %v", e, a)
	}
	if n := q.Depth(); n != 0 {
		t.Errorf("item did not get removed: depth %d", n)
	}
}

func TestDeltaFIFO_ReplaceMakesDeletions(t *testing.T) {
	ctx := context.Background()
	// We test with only one pre-existing object because there is no
	// promise about how their deletes are ordered.
	threeKnown := []testFifoObject{mkFifoObj("foo", 5), mkFifoObj("bar", 6), mkFifoObj("baz", 7)}
	tests := []struct {
		name   string
		known  []testFifoObject
		ops    func(t *testing.T, q *deltafifo.Queue)
		pops   []popped
		deltas map[string]cache.Deltas
	}{{
		name:  "a pre-existing Delete",
		known: threeKnown,
		ops: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.Delete(ctx, mkFifoObj("baz", 10)))
			replace(t, q, []interface{}{mkFifoObj("foo", 5)}, "0")
		},
		pops: concat(
			[]popped{deltasBatch([]string{"baz"}, cache.Deltas{{Type: cache.Deleted, Object: mkFifoObj("baz", 10)}})},
			replaceBatches(false, []interface{}{mkFifoObj("foo", 5)}),
		),
		deltas: map[string]cache.Deltas{
			"baz": {{Type: cache.Deleted, Object: mkFifoObj("baz", 10)}},
			"foo": {{Type: cache.Sync, Object: mkFifoObj("foo", 5)}},
			// Since "bar" didn't have a delete event and wasn't in the
			// Replace list it should get a tombstone key with the right Obj.
			"bar": {{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "bar", Obj: mkFifoObj("bar", 6)}}},
		},
	}, {
		name:  "an Add instead of a Delete",
		known: threeKnown,
		ops: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.Add(ctx, mkFifoObj("baz", 10)))
			replace(t, q, []interface{}{mkFifoObj("foo", 5)}, "0")
		},
		pops: concat(
			[]popped{deltasBatch([]string{"baz"}, cache.Deltas{{Type: cache.Added, Object: mkFifoObj("baz", 10)}})},
			replaceBatches(false, []interface{}{mkFifoObj("foo", 5)}),
		),
		deltas: map[string]cache.Deltas{
			"baz": {
				{Type: cache.Added, Object: mkFifoObj("baz", 10)},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "baz", Obj: mkFifoObj("baz", 10)}},
			},
			"foo": {{Type: cache.Sync, Object: mkFifoObj("foo", 5)}},
			"bar": {{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "bar", Obj: mkFifoObj("bar", 6)}}},
		},
	}, {
		name:  "deleting and recreating the object in the queue, then deleting it by a Replace",
		known: threeKnown,
		ops: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.Delete(ctx, mkFifoObj("bar", 6)))
			must(t, q.Add(ctx, mkFifoObj("bar", 100)))
			replace(t, q, []interface{}{mkFifoObj("foo", 5)}, "0")
		},
		pops: concat(
			[]popped{deltasBatch([]string{"bar"}, cache.Deltas{
				{Type: cache.Deleted, Object: mkFifoObj("bar", 6)}, {Type: cache.Added, Object: mkFifoObj("bar", 100)},
			})},
			replaceBatches(false, []interface{}{mkFifoObj("foo", 5)}),
		),
		deltas: map[string]cache.Deltas{
			"bar": {
				{Type: cache.Deleted, Object: mkFifoObj("bar", 6)},
				{Type: cache.Added, Object: mkFifoObj("bar", 100)},
				// Since "bar" has a newer object in the queue than in the
				// state, it should get a tombstone key with the latest
				// object from the queue.
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "bar", Obj: mkFifoObj("bar", 100)}},
			},
			"foo": {{Type: cache.Sync, Object: mkFifoObj("foo", 5)}},
			"baz": {{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "baz", Obj: mkFifoObj("baz", 7)}}},
		},
	}, {
		name:  "syncing it first to ensure the delete uses the latest version",
		known: threeKnown,
		ops: func(t *testing.T, q *deltafifo.Queue) {
			replace(t, q, []interface{}{mkFifoObj("bar", 100), mkFifoObj("foo", 5)}, "0")
			replace(t, q, []interface{}{mkFifoObj("foo", 5)}, "0")
		},
		// The first relist is the initial list, as client-go flags it.
		pops: concat(
			replaceBatches(true, []interface{}{mkFifoObj("bar", 100), mkFifoObj("foo", 5)}),
			replaceBatches(false, []interface{}{mkFifoObj("foo", 5)}),
		),
		deltas: map[string]cache.Deltas{
			"bar": {
				{Type: cache.Sync, Object: mkFifoObj("bar", 100)},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "bar", Obj: mkFifoObj("bar", 100)}},
			},
			"foo": {
				{Type: cache.Sync, Object: mkFifoObj("foo", 5)},
				{Type: cache.Sync, Object: mkFifoObj("foo", 5)},
			},
			"baz": {{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "baz", Obj: mkFifoObj("baz", 7)}}},
		},
	}, {
		name: "without an explicit KeyListerGetter",
		ops: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.Add(ctx, mkFifoObj("baz", 10)))
			replace(t, q, []interface{}{mkFifoObj("foo", 5)}, "0")
		},
		pops: concat(
			[]popped{deltasBatch([]string{"baz"}, cache.Deltas{{Type: cache.Added, Object: mkFifoObj("baz", 10)}})},
			replaceBatches(false, []interface{}{mkFifoObj("foo", 5)}),
		),
		deltas: map[string]cache.Deltas{
			"baz": {
				{Type: cache.Added, Object: mkFifoObj("baz", 10)},
				{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "baz", Obj: mkFifoObj("baz", 10)}},
			},
			"foo": {{Type: cache.Sync, Object: mkFifoObj("foo", 5)}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var known literalListerGetter
			if tc.known != nil {
				known = func() []testFifoObject { return tc.known }
			}
			q := newFifo(t, known, deltafifo.Options{})
			tc.ops(t, q)
			got := popAll(t, q, 10)
			if !reflect.DeepEqual(got, tc.pops) {
				t.Fatalf("popped\n%#v\nwant\n%#v", got, tc.pops)
			}
			c := newRefConsumer(tc.known, false)
			c.apply(t, got)
			c.checkDeltas(t, tc.deltas)
		})
	}
}

// TestDeltaFIFO_ReplaceMakesDeletionsReplaced is the same as the above
// test, but with Replaced deltas. The queue has no EmitDeltaTypeReplaced:
// it pops the same batches either way, and the consumer picks the type.
func TestDeltaFIFO_ReplaceMakesDeletionsReplaced(t *testing.T) {
	ctx := context.Background()
	known := []testFifoObject{mkFifoObj("foo", 5), mkFifoObj("bar", 6), mkFifoObj("baz", 7)}
	q := newFifo(t, func() []testFifoObject { return known }, deltafifo.Options{})

	must(t, q.Delete(ctx, mkFifoObj("baz", 10)))
	replace(t, q, []interface{}{mkFifoObj("foo", 6)}, "0")

	got := popAll(t, q, 10)
	want := concat(
		[]popped{deltasBatch([]string{"baz"}, cache.Deltas{{Type: cache.Deleted, Object: mkFifoObj("baz", 10)}})},
		replaceBatches(false, []interface{}{mkFifoObj("foo", 6)}),
	)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("popped\n%#v\nwant\n%#v", got, want)
	}
	c := newRefConsumer(known, true)
	c.apply(t, got)
	c.checkDeltas(t, map[string]cache.Deltas{
		"baz": {{Type: cache.Deleted, Object: mkFifoObj("baz", 10)}},
		"foo": {{Type: cache.Replaced, Object: mkFifoObj("foo", 6)}},
		// Since "bar" didn't have a delete event and wasn't in the
		// Replace list it should get a tombstone key with the right Obj.
		"bar": {{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "bar", Obj: mkFifoObj("bar", 6)}}},
	})
}

// TestDeltaFIFO_ReplaceDeltaType checks that a listed object reaches the
// consumer as a listed object (a page), never as a queued delta: the
// consumer emits Replaced for it.
func TestDeltaFIFO_ReplaceDeltaType(t *testing.T) {
	known := []testFifoObject{mkFifoObj("foo", 5)}
	q := newFifo(t, func() []testFifoObject { return known }, deltafifo.Options{})
	replace(t, q, []interface{}{mkFifoObj("foo", 5)}, "0")

	got := popAll(t, q, 10)
	if want := replaceBatches(true, []interface{}{mkFifoObj("foo", 5)}); !reflect.DeepEqual(got, want) {
		t.Fatalf("popped\n%#v\nwant\n%#v", got, want)
	}
	c := newRefConsumer(known, true)
	c.apply(t, got)
	c.checkDeltas(t, map[string]cache.Deltas{"foo": {{Type: cache.Replaced, Object: mkFifoObj("foo", 5)}}})
}

func TestDeltaFIFO_HasSyncedCorrectOnDeletion(t *testing.T) {
	known := []testFifoObject{mkFifoObj("foo", 5), mkFifoObj("bar", 6), mkFifoObj("baz", 7)}
	q := newFifo(t, func() []testFifoObject { return known }, deltafifo.Options{})
	replace(t, q, []interface{}{mkFifoObj("foo", 5)}, "0")

	// client-go pops foo's Sync and the tombstones of bar and baz, each
	// flagged initial, and is synced after the last. Ours pops the
	// relist's begin, page and end, each flagged initial, and is synced
	// once the end is popped; the consumer derives the deletions.
	expected := replaceBatches(true, []interface{}{mkFifoObj("foo", 5)})
	var got []popped
	for i, want := range expected {
		if q.HasSynced() {
			t.Errorf("pop %d: Expected HasSynced to be false", i)
		}
		b := project(pop(t, q, 10))
		if !reflect.DeepEqual(b, want) {
			t.Errorf("pop %d: Expected %#v, got %#v", i, want, b)
		}
		if !b.Initial {
			t.Errorf("pop %d: Expected initial list item", i)
		}
		got = append(got, b)
	}
	if !q.HasSynced() {
		t.Errorf("Expected HasSynced to be true")
	}
	c := newRefConsumer(known, false)
	c.apply(t, got)
	c.checkDeltas(t, map[string]cache.Deltas{
		"foo": {{Type: cache.Sync, Object: mkFifoObj("foo", 5)}},
		"bar": {{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "bar", Obj: mkFifoObj("bar", 6)}}},
		"baz": {{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "baz", Obj: mkFifoObj("baz", 7)}}},
	})
}

func TestDeltaFIFO_HasSynced(t *testing.T) {
	ctx := context.Background()
	popOne := func(t *testing.T, q *deltafifo.Queue) { pop(t, q, 1) }
	tests := []struct {
		name    string
		actions []func(t *testing.T, q *deltafifo.Queue)
		// clientGo is client-go's expectation, ours ours where it differs.
		clientGo, ours bool
	}{{
		name:     "nothing pushed",
		actions:  nil,
		clientGo: false, ours: false,
	}, {
		name: "an add first",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) { must(t, q.Add(ctx, mkFifoObj("a", 1))) },
		},
		clientGo: true, ours: true,
	}, {
		// client-go is synced at once by an empty initial list; ours
		// when the consumer pops its end.
		name: "an empty list, not popped",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) { replace(t, q, []interface{}{}, "0") },
		},
		clientGo: true, ours: false,
	}, {
		name: "an empty list, popped",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) { replace(t, q, []interface{}{}, "0") },
			popOne, popOne,
		},
		clientGo: true, ours: true,
	}, {
		name: "a list of two",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) {
				replace(t, q, []interface{}{mkFifoObj("a", 1), mkFifoObj("b", 2)}, "0")
			},
		},
		clientGo: false, ours: false,
	}, {
		name: "a list of two, one item popped",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) {
				replace(t, q, []interface{}{mkFifoObj("a", 1), mkFifoObj("b", 2)}, "0")
			},
			popOne, popOne, // the begin, then a
		},
		clientGo: false, ours: false,
	}, {
		name: "a list of two, both items popped",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) {
				replace(t, q, []interface{}{mkFifoObj("a", 1), mkFifoObj("b", 2)}, "0")
			},
			popOne, popOne, popOne, // the begin, a, b: the end is not popped
		},
		clientGo: true, ours: false,
	}, {
		name: "a list of two, popped to its end",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) {
				replace(t, q, []interface{}{mkFifoObj("a", 1), mkFifoObj("b", 2)}, "0")
			},
			popOne, popOne, popOne, popOne,
		},
		clientGo: true, ours: true,
	}, {
		// This case won't happen in practice since a Reflector always
		// passes a complete snapshot consistent in time; there cannot be
		// duplicate keys in the list or apiserver is broken. client-go
		// queues one key, ours one page of two objects.
		name: "a list with a duplicate key, popped",
		actions: []func(t *testing.T, q *deltafifo.Queue){
			func(t *testing.T, q *deltafifo.Queue) {
				replace(t, q, []interface{}{mkFifoObj("a", 1), mkFifoObj("a", 2)}, "0")
			},
			popOne, popOne, popOne, popOne,
		},
		clientGo: true, ours: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newFifo(t, nil, deltafifo.Options{})
			for _, action := range tc.actions {
				action(t, q)
			}
			if got := q.HasSynced(); got != tc.ours {
				t.Errorf("HasSynced = %v, want %v (client-go: %v)", got, tc.ours, tc.clientGo)
			}
		})
	}
}
