package deltafifo_test

// Helpers of the client-go conformance tests (clientgo_*_test.go). They
// port client-go's tools/cache/fifo_test.go and delta_fifo_test.go helpers
// at v0.36.3: testFifoObject, mkFifoObj, testFifoObjectKeyFunc and
// literalListerGetter. Adapted: literalListerGetter only lists keys (our
// KnownObjects is ListKeys only: Sync deltas carry keys), and client-go's
// Pop(f) becomes popBatches/popKey over our batch Pop.

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
)

// testFifoObject is client-go's test object: a name (its key) and a value.
// It has no resourceVersion, so it never moves the queue's safe
// resourceVersion (tested in saferv_test.go with pods).
type testFifoObject struct {
	name string
	val  interface{}
}

func mkFifoObj(name string, val interface{}) testFifoObject {
	return testFifoObject{name: name, val: val}
}

// testFifoObjectKeyFunc panics on anything but a testFifoObject, as
// client-go's does; the queue turns that into a cache.KeyError.
func testFifoObjectKeyFunc(obj interface{}) (string, error) {
	return obj.(testFifoObject).name, nil
}

// literalListerGetter is client-go's KeyListerGetter over a fixed list of
// objects; the queue reads only its keys.
type literalListerGetter func() []testFifoObject

func (kl literalListerGetter) ListKeys() []string {
	result := []string{}
	for _, o := range kl() {
		result = append(result, o.name)
	}
	return result
}

// newFifo returns a queue keyed by testFifoObjectKeyFunc, with known as
// its KnownObjects (nil for none).
func newFifo(t *testing.T, known literalListerGetter, opts deltafifo.Options) *deltafifo.Queue {
	t.Helper()
	opts.KeyFunc = testFifoObjectKeyFunc
	if known != nil {
		opts.KnownObjects = known
	}
	return newQueue(t, opts)
}

// popped is a Batch without its ResourceVersion (testFifoObjects carry
// none; saferv_test.go covers it), compared with reflect.DeepEqual as
// client-go compares Deltas.
type popped struct {
	Kind    deltafifo.Kind
	Keys    []string
	Deltas  []cache.Deltas
	Objects []interface{}
	Initial bool
}

func project(b deltafifo.Batch) popped {
	return popped{Kind: b.Kind, Keys: b.Keys, Deltas: b.Deltas, Objects: b.Objects, Initial: b.IsInInitialList}
}

// popAll closes q and pops everything with batches of at most max.
func popAll(t *testing.T, q *deltafifo.Queue, max int) []popped {
	t.Helper()
	return popClosed(t, q, max, project)
}

// popKey pops one key, as client-go's Pop(f) pops one item, and returns
// its key and deltas; the head batch must be a KindDeltas batch.
func popKey(t *testing.T, q *deltafifo.Queue) (string, cache.Deltas) {
	t.Helper()
	b := pop(t, q, 1)
	if b.Kind != deltafifo.KindDeltas || len(b.Keys) != 1 {
		t.Fatalf("popped %s, want one key's deltas", describeFifo(b))
	}
	return b.Keys[0], b.Deltas[0]
}

// describeFifo renders a batch for failure messages.
func describeFifo(b deltafifo.Batch) string {
	return fmt.Sprintf("%s %#v", b.Kind, project(b))
}

// The batch constructors below build expected batches.

func deltasBatch(keys []string, deltas ...cache.Deltas) popped {
	return popped{Kind: deltafifo.KindDeltas, Keys: keys, Deltas: deltas}
}

func replaceBatches(initial bool, pages ...[]interface{}) []popped {
	out := []popped{{Kind: deltafifo.KindReplaceBegin, Initial: initial}}
	for _, p := range pages {
		out = append(out, popped{Kind: deltafifo.KindReplacePage, Objects: p, Initial: initial})
	}
	return append(out, popped{Kind: deltafifo.KindReplaceEnd, Initial: initial})
}

func concat(parts ...[]popped) []popped {
	var out []popped
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// replace pushes a whole relist of objs (one page, none when empty) at
// rv: client-go's f.Replace(objs, rv).
func replace(t *testing.T, q *deltafifo.Queue, objs []interface{}, rv string) {
	t.Helper()
	ctx := context.Background()
	must(t, q.BeginReplace(ctx))
	must(t, q.ReplacePage(ctx, objs))
	must(t, q.EndReplace(ctx, rv))
}
