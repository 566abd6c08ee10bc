package deltafifo_test

// This file ports client-go's tools/cache/delta_fifo_test.go at v0.36.3:
// the tests of watch deltas, resync, ordering, KeyOf and Close (the
// relist and HasSynced tests are in clientgo_replace_test.go). Adapted:
//
//   - client-go's Pop(f) pops one key's Deltas; ours pops batches, so
//     Pop(ctx, 1) stands in for it (popKey) and a second Pop that would
//     block is checked with Segments (Pop blocks iff it is 0) instead of a
//     50ms wait;
//   - a Delete for a key neither queued nor in KnownObjects is queued, not
//     dropped (documented in the package doc: popped batches may not be
//     applied yet, so only the consumer knows);
//   - Sync deltas carry the key (cache.ExplicitKey), not the known object
//     (documented on Resync);
//   - the Transformer is never applied to a cache.DeletedFinalStateUnknown
//     (documented on Options.Transformer; client-go's own tombstones come
//     from Replace, which ours does not make);
//   - KeyOf is not exported: keys are checked on what is popped, and the
//     cases of a cache.Deltas passed to KeyOf do not apply (our queue is
//     never handed a popped Deltas back: there is no AddIfNotPresent).

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestDeltaFIFO_basic(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, nil, deltafifo.Options{})
	const amount = 500
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < amount; i++ {
			if err := q.Add(ctx, mkFifoObj(string([]rune{'a', rune(i)}), i+1)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for u := uint64(0); u < amount; u++ {
			if err := q.Add(ctx, mkFifoObj(string([]rune{'b', rune(u)}), u+1)); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	lastInt := int(0)
	lastUint := uint64(0)
	for i := 0; i < amount*2; i++ {
		_, d := popKey(t, q)
		if len(d) != 1 || d[0].Type != cache.Added {
			t.Fatalf("got %#v, want one Added delta", d)
		}
		switch obj := d.Newest().Object.(testFifoObject).val.(type) {
		case int:
			if obj <= lastInt {
				t.Errorf("got %v (int) out of order, last was %v", obj, lastInt)
			}
			lastInt = obj
		case uint64:
			if obj <= lastUint {
				t.Errorf("got %v (uint) out of order, last was %v", obj, lastUint)
			} else {
				lastUint = obj
			}
		default:
			t.Fatalf("unexpected type %#v", obj)
		}
	}
	wg.Wait()
}

func TestDeltaFIFO_addUpdate(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, nil, deltafifo.Options{})
	must(t, q.Add(ctx, mkFifoObj("foo", 10)))
	must(t, q.Update(ctx, mkFifoObj("foo", 12)))
	must(t, q.Delete(ctx, mkFifoObj("foo", 15)))

	key, d := popKey(t, q)
	want := cache.Deltas{
		{Type: cache.Added, Object: mkFifoObj("foo", 10)},
		{Type: cache.Updated, Object: mkFifoObj("foo", 12)},
		{Type: cache.Deleted, Object: mkFifoObj("foo", 15)},
	}
	if key != "foo" || !reflect.DeepEqual(d, want) {
		t.Errorf("popped %q %#v, want foo %#v", key, d, want)
	}
	if e, a := 15, d.Newest().Object.(testFifoObject).val; e != a {
		t.Errorf("Didn't get updated value (%v), got %v", e, a)
	}
	// Nothing else is queued: a second Pop would block.
	if n := deltafifo.Segments(q); n != 0 {
		t.Errorf("%d segments left, want 0", n)
	}
	if n := q.Depth(); n != 0 {
		t.Errorf("Depth = %d, want 0: the item did not get removed", n)
	}
}

type rvAndXfrm struct {
	rv   int
	xfrm int
}

func TestDeltaFIFO_transformer(t *testing.T) {
	ctx := context.Background()
	mk := func(name string, rv int) testFifoObject {
		return mkFifoObj(name, &rvAndXfrm{rv, 0})
	}
	tombstoneCalls := 0
	xfrm := cache.TransformFunc(func(obj interface{}) (interface{}, error) {
		switch v := obj.(type) {
		case testFifoObject:
			v.val.(*rvAndXfrm).xfrm++
		case cache.DeletedFinalStateUnknown:
			tombstoneCalls++
		default:
			return nil, errors.New("unexpected object")
		}
		return obj, nil
	})
	q := newFifo(t, nil, deltafifo.Options{Transformer: xfrm})
	must(t, q.Add(ctx, mk("foo", 10)))
	must(t, q.Add(ctx, mk("bar", 11)))
	must(t, q.Update(ctx, mk("foo", 12)))
	must(t, q.Delete(ctx, mk("foo", 15)))
	replace(t, q, []interface{}{}, "")
	must(t, q.Add(ctx, mk("bar", 16)))
	replace(t, q, []interface{}{}, "")
	// Ours only: a tombstone pushed by the producer (a relist's deletes
	// are the consumer's) is queued as it is.
	baz := mk("baz", 20)
	baz.val.(*rvAndXfrm).xfrm = 1
	must(t, q.Delete(ctx, cache.DeletedFinalStateUnknown{Key: "baz", Obj: baz}))

	done := func(name string, rv int) testFifoObject {
		return mkFifoObj(name, &rvAndXfrm{rv, 1})
	}
	// client-go then holds foo (deleted, rv 15) and bar (a tombstone of rv
	// 16 made by the second Replace). Ours hands the consumer every delta
	// and both relists in order: its store's replace deletes bar.
	want := concat(
		[]popped{deltasBatch([]string{"foo", "bar"},
			cache.Deltas{{Type: cache.Added, Object: done("foo", 10)}, {Type: cache.Updated, Object: done("foo", 12)}, {Type: cache.Deleted, Object: done("foo", 15)}},
			cache.Deltas{{Type: cache.Added, Object: done("bar", 11)}},
		)},
		replaceBatches(false),
		[]popped{deltasBatch([]string{"bar"}, cache.Deltas{{Type: cache.Added, Object: done("bar", 16)}})},
		replaceBatches(false),
		[]popped{deltasBatch([]string{"baz"}, cache.Deltas{{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "baz", Obj: done("baz", 20)}}})},
	)
	if got := popAll(t, q, 10); !reflect.DeepEqual(got, want) {
		t.Errorf("popped\n%#v\nwant\n%#v", got, want)
	}
	if tombstoneCalls != 0 {
		t.Errorf("the Transformer was applied to %d tombstones, want 0", tombstoneCalls)
	}
}

func TestDeltaFIFO_enqueueingNoLister(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, nil, deltafifo.Options{})
	must(t, q.Add(ctx, mkFifoObj("foo", 10)))
	must(t, q.Update(ctx, mkFifoObj("bar", 15)))
	must(t, q.Add(ctx, mkFifoObj("qux", 17)))
	must(t, q.Delete(ctx, mkFifoObj("qux", 18)))

	// client-go drops this delete because baz doesn't exist. Ours queues
	// it (see the package doc): the consumer, which knows what it has
	// applied, ignores a delete of an object it does not hold.
	must(t, q.Delete(ctx, mkFifoObj("baz", 20)))

	expectList := []int{10, 15, 18, 20}
	for _, expect := range expectList {
		if _, d := popKey(t, q); d.Newest().Object.(testFifoObject).val != expect {
			t.Errorf("Didn't get updated value (%v), got %#v", expect, d)
		}
	}
	if n := q.Depth(); n != 0 {
		t.Errorf("queue unexpectedly not empty: depth %d", n)
	}
}

func TestDeltaFIFO_enqueueingWithLister(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, func() []testFifoObject {
		return []testFifoObject{mkFifoObj("foo", 5), mkFifoObj("bar", 6), mkFifoObj("baz", 7)}
	}, deltafifo.Options{})
	must(t, q.Add(ctx, mkFifoObj("foo", 10)))
	must(t, q.Update(ctx, mkFifoObj("bar", 15)))

	// This delete does enqueue the deletion, because "baz" is in the key lister.
	must(t, q.Delete(ctx, mkFifoObj("baz", 20)))

	expectList := []int{10, 15, 20}
	for _, expect := range expectList {
		if _, d := popKey(t, q); d.Newest().Object.(testFifoObject).val != expect {
			t.Errorf("Didn't get updated value (%v), got %#v", expect, d)
		}
	}
	if n := q.Depth(); n != 0 {
		t.Errorf("queue unexpectedly not empty: depth %d", n)
	}
}

func TestDeltaFIFO_ResyncNonExisting(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, func() []testFifoObject {
		return []testFifoObject{mkFifoObj("foo", 5)}
	}, deltafifo.Options{})
	must(t, q.Delete(ctx, mkFifoObj("foo", 10)))
	must(t, q.Resync(ctx))

	want := []popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Deleted, Object: mkFifoObj("foo", 10)}})}
	if got := popAll(t, q, 10); !reflect.DeepEqual(got, want) {
		t.Errorf("popped %#v, want %#v", got, want)
	}
}

func TestDeltaFIFO_Resync(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, func() []testFifoObject {
		return []testFifoObject{mkFifoObj("foo", 5)}
	}, deltafifo.Options{})
	must(t, q.Resync(ctx))

	// client-go's Sync delta carries the known object; ours its key (the
	// consumer notifies with the object it holds when it applies it).
	want := []popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Sync, Object: cache.ExplicitKey("foo")}})}
	if got := popAll(t, q, 10); !reflect.DeepEqual(got, want) {
		t.Errorf("popped %#v, want %#v", got, want)
	}
}

func TestDeltaFIFO_DeleteExistingNonPropagated(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, func() []testFifoObject { return []testFifoObject{} }, deltafifo.Options{})
	must(t, q.Add(ctx, mkFifoObj("foo", 5)))
	must(t, q.Delete(ctx, mkFifoObj("foo", 6)))

	want := []popped{deltasBatch([]string{"foo"}, cache.Deltas{
		{Type: cache.Added, Object: mkFifoObj("foo", 5)},
		{Type: cache.Deleted, Object: mkFifoObj("foo", 6)},
	})}
	if got := popAll(t, q, 10); !reflect.DeepEqual(got, want) {
		t.Errorf("popped %#v, want %#v", got, want)
	}
}

func TestDeltaFIFO_UpdateResyncRace(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, func() []testFifoObject {
		return []testFifoObject{mkFifoObj("foo", 5)}
	}, deltafifo.Options{})
	must(t, q.Update(ctx, mkFifoObj("foo", 6)))
	must(t, q.Resync(ctx))

	want := []popped{deltasBatch([]string{"foo"}, cache.Deltas{{Type: cache.Updated, Object: mkFifoObj("foo", 6)}})}
	if got := popAll(t, q, 10); !reflect.DeepEqual(got, want) {
		t.Errorf("popped %#v, want %#v", got, want)
	}
}

func TestDeltaFIFO_detectLineJumpers(t *testing.T) {
	ctx := context.Background()
	q := newFifo(t, nil, deltafifo.Options{})

	must(t, q.Add(ctx, mkFifoObj("foo", 10)))
	must(t, q.Add(ctx, mkFifoObj("bar", 1)))
	must(t, q.Add(ctx, mkFifoObj("foo", 11)))
	must(t, q.Add(ctx, mkFifoObj("foo", 13)))
	must(t, q.Add(ctx, mkFifoObj("zab", 30)))

	next := func() interface{} {
		_, d := popKey(t, q)
		return d.Newest().Object.(testFifoObject).val
	}
	if e, a := 13, next(); a != e {
		t.Fatalf("expected %d, got %d", e, a)
	}

	must(t, q.Add(ctx, mkFifoObj("foo", 14))) // ensure foo doesn't jump back in line

	for _, e := range []int{1, 30, 14} {
		if a := next(); a != e {
			t.Fatalf("expected %d, got %d", e, a)
		}
	}
}

func TestDeltaFIFO_KeyOf(t *testing.T) {
	ctx := context.Background()
	table := []struct {
		obj interface{}
		key string
	}{
		{obj: testFifoObject{name: "A"}, key: "A"},
		// The key function would panic on a tombstone: its Key is used.
		{obj: cache.DeletedFinalStateUnknown{Key: "B", Obj: nil}, key: "B"},
	}
	for _, item := range table {
		q := newFifo(t, nil, deltafifo.Options{})
		must(t, q.Delete(ctx, item.obj))
		if key, _ := popKey(t, q); key != item.key {
			t.Errorf("Expected %v, got %v", item.key, key)
		}
	}

	// Ours only: a key function's panic or error is a cache.KeyError and
	// queues nothing.
	q := newFifo(t, nil, deltafifo.Options{})
	var keyErr cache.KeyError
	if err := q.Add(ctx, "not a testFifoObject"); !errors.As(err, &keyErr) {
		t.Errorf("Add of an object without a key: %v, want a cache.KeyError", err)
	}
	if n := deltafifo.Segments(q); n != 0 {
		t.Errorf("%d segments queued after a key error, want 0", n)
	}
}

// TestDeltaFIFO_PopShouldUnblockWhenClosed checks that any blocking Pop on
// an empty queue unblocks and returns ErrClosed after Close is called.
func TestDeltaFIFO_PopShouldUnblockWhenClosed(t *testing.T) {
	q := newFifo(t, func() []testFifoObject {
		return []testFifoObject{mkFifoObj("foo", 5)}
	}, deltafifo.Options{})

	c := make(chan error)
	const jobs = 10
	for i := 0; i < jobs; i++ {
		go func() {
			_, err := q.Pop(context.Background(), 1)
			c <- err
		}()
	}

	q.Close()

	for i := 0; i < jobs; i++ {
		select {
		case err := <-c:
			if !errors.Is(err, deltafifo.ErrClosed) {
				t.Errorf("Pop after Close: %v, want ErrClosed", err)
			}
		case <-time.After(testkit.Timeout()):
			t.Fatalf("timed out waiting for Pop to return after Close")
		}
	}
}
