package deltafifo_test

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// TestDeltasSegment covers per-key accumulation, ordering, delete dedup,
// tombstones and the safe resourceVersion within one deltas segment.
func TestDeltasSegment(t *testing.T) {
	ctx := context.Background()
	add := func(name, rv string) func(*testing.T, *deltafifo.Queue) {
		return func(t *testing.T, q *deltafifo.Queue) { must(t, q.Add(ctx, testkit.Pod(name, rv))) }
	}
	update := func(name, rv string) func(*testing.T, *deltafifo.Queue) {
		return func(t *testing.T, q *deltafifo.Queue) { must(t, q.Update(ctx, testkit.Pod(name, rv))) }
	}
	del := func(obj interface{}) func(*testing.T, *deltafifo.Queue) {
		return func(t *testing.T, q *deltafifo.Queue) { must(t, q.Delete(ctx, obj)) }
	}
	bookmark := func(rv string) func(*testing.T, *deltafifo.Queue) {
		return func(t *testing.T, q *deltafifo.Queue) { must(t, q.Bookmark(ctx, rv)) }
	}
	popped := []string{}
	popOne := func(max int) func(*testing.T, *deltafifo.Queue) {
		return func(t *testing.T, q *deltafifo.Queue) { popped = append(popped, describe(pop(t, q, max))) }
	}

	tests := []struct {
		name string
		opts deltafifo.Options
		ops  []func(*testing.T, *deltafifo.Queue)
		max  int
		want []string // popped by the ops, then by draining with max
	}{{
		name: "deltas accumulate per key, keys in first-arrival order",
		ops:  ops(add("a", "1"), add("b", "2"), update("a", "3"), del(testkit.Pod("b", "4"))),
		max:  10,
		want: []string{"Deltas rv=4 a[Added:a/1 Updated:a/3] b[Added:b/2 Deleted:b/4]"},
	}, {
		name: "max splits keys; the safe RV is the new head key's prevRV",
		ops:  ops(add("a", "1"), add("b", "2"), update("a", "3"), add("c", "4")),
		max:  1,
		want: []string{
			"Deltas rv=1 a[Added:a/1 Updated:a/3]", // b arrived after 1
			"Deltas rv=3 b[Added:b/2]",             // c arrived after 3
			"Deltas rv=4 c[Added:c/4]",
		},
	}, {
		name: "a real delete followed by a tombstone keeps the real one",
		ops:  ops(add("a", "1"), del(testkit.Pod("a", "5")), del(tomb("a", testkit.Pod("a", "1")))),
		max:  10,
		want: []string{"Deltas rv=5 a[Added:a/1 Deleted:a/5]"},
	}, {
		name: "a tombstone followed by a real delete keeps the real one",
		ops:  ops(del(tomb("a", testkit.Pod("a", "4"))), del(testkit.Pod("a", "6"))),
		max:  10,
		want: []string{"Deltas rv=6 a[Deleted:a/6]"},
	}, {
		name: "two tombstones keep the newer",
		opts: deltafifo.Options{InitialResourceVersion: "7"},
		ops:  ops(del(tomb("a", testkit.Pod("a", "1"))), del(tomb("a", nil))),
		max:  10,
		want: []string{"Deltas rv=7 a[Deleted:tomb:-]"},
	}, {
		name: "deletes separated by another delta are not deduplicated",
		ops:  ops(del(testkit.Pod("a", "1")), add("a", "2"), del(testkit.Pod("a", "3"))),
		max:  10,
		want: []string{"Deltas rv=3 a[Deleted:a/1 Added:a/2 Deleted:a/3]"},
	}, {
		name: "tombstones and objects without RV do not move the RV",
		ops:  ops(add("a", "1"), del(tomb("b", testkit.Pod("b", "9"))), add("c", "")),
		max:  10,
		want: []string{"Deltas rv=1 a[Added:a/1] b[Deleted:tomb:9] c[Added:c/]"},
	}, {
		name: "a tombstone is keyed by its Key whatever the KeyFunc",
		opts: deltafifo.Options{KeyFunc: cache.MetaNamespaceKeyFunc},
		ops:  ops(add("a", "1"), del(tomb("a", nil))),
		max:  10,
		want: []string{"Deltas rv=1 a[Added:a/1 Deleted:tomb:-]"},
	}, {
		name: "a delete for a key never seen is queued",
		ops:  ops(del(testkit.Pod("a", "3"))),
		max:  10,
		want: []string{"Deltas rv=3 a[Deleted:a/3]"},
	}, {
		name: "a bookmark after the last key is the drained segment's RV",
		ops:  ops(add("a", "1"), add("b", "2"), bookmark("9")),
		max:  1,
		want: []string{"Deltas rv=1 a[Added:a/1]", "Deltas rv=9 b[Added:b/2]"},
	}, {
		name: "a bookmark between keys becomes the next key's prevRV",
		ops:  ops(add("a", "1"), bookmark("2"), add("b", "3")),
		max:  1,
		want: []string{"Deltas rv=2 a[Added:a/1]", "Deltas rv=3 b[Added:b/3]"},
	}, {
		name: "a bookmark into an empty queue yields an empty deltas batch",
		ops:  ops(bookmark("5"), bookmark("6")),
		max:  10,
		want: []string{"Deltas rv=6"},
	}, {
		name: "a bookmark at the last RV does nothing",
		opts: deltafifo.Options{InitialResourceVersion: "5"},
		ops:  ops(bookmark("5")),
		max:  10,
		want: nil,
	}, {
		name: "a bookmark after a drained segment yields its own batch",
		ops:  ops(add("a", "1"), popOne(10), bookmark("2")),
		max:  10,
		want: []string{"Deltas rv=1 a[Added:a/1]", "Deltas rv=2"},
	}, {
		name: "a popped key re-enters at the back with a new prevRV",
		ops:  ops(add("a", "1"), add("b", "2"), popOne(1), update("a", "3")),
		max:  1,
		want: []string{
			"Deltas rv=1 a[Added:a/1]",
			"Deltas rv=2 b[Added:b/2]",
			"Deltas rv=3 a[Updated:a/3]",
		},
	}, {
		name: "draining at once returns every key in order with the last RV",
		ops:  ops(add("a", "1"), add("b", "2"), popOne(1), update("a", "3")),
		max:  10,
		want: []string{"Deltas rv=1 a[Added:a/1]", "Deltas rv=3 b[Added:b/2] a[Updated:a/3]"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			popped = nil
			q := newQueue(t, tc.opts)
			for _, op := range tc.ops {
				op(t, q)
			}
			got := append(popped, drain(t, q, tc.max)...)
			equalLines(t, "batches", got, tc.want)
		})
	}
}

func ops(fs ...func(*testing.T, *deltafifo.Queue)) []func(*testing.T, *deltafifo.Queue) {
	return fs
}

// TestDepth checks that the depth counts queued deltas (deduplicated
// deletes included) and drops as keys are popped.
func TestDepth(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, deltafifo.Options{})
	must(t, q.Add(ctx, testkit.Pod("a", "1")))
	must(t, q.Update(ctx, testkit.Pod("a", "2")))
	must(t, q.Add(ctx, testkit.Pod("b", "3")))
	must(t, q.Delete(ctx, testkit.Pod("b", "4")))
	must(t, q.Delete(ctx, tomb("b", nil))) // deduplicated
	must(t, q.Bookmark(ctx, "5"))          // not counted
	if got := q.Depth(); got != 4 {
		t.Fatalf("Depth = %d, want 4", got)
	}
	pop(t, q, 1)
	if got := q.Depth(); got != 2 {
		t.Fatalf("Depth after popping a = %d, want 2", got)
	}
	pop(t, q, 1)
	if got := q.Depth(); got != 0 {
		t.Fatalf("Depth after popping b = %d, want 0", got)
	}
}

// TestResync covers Sync deltas: skipped for keys with queued deltas (in
// any segment), not transformed, not moving the RV, and lookup failures.
func TestResync(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		known  *known
		before func(*testing.T, *deltafifo.Queue)
		want   []string
	}{{
		name:  "every known key gets a Sync delta, in ListKeys order",
		known: &known{pods: []*corev1.Pod{testkit.Pod("a", "1"), testkit.Pod("b", "2")}},
		want:  []string{"Deltas rv=10 a[Sync:a] b[Sync:b]"},
	}, {
		name:  "keys with queued deltas are skipped",
		known: &known{pods: []*corev1.Pod{testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3")}},
		before: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.Update(ctx, testkit.Pod("b", "11")))
		},
		want: []string{"Deltas rv=11 b[Updated:b/11(t)] a[Sync:a] c[Sync:c]"},
	}, {
		name:  "keys with deltas queued in an earlier segment are skipped",
		known: &known{pods: []*corev1.Pod{testkit.Pod("a", "1"), testkit.Pod("b", "2")}},
		before: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.Update(ctx, testkit.Pod("a", "11")))
			must(t, q.MarkSynced(ctx))
		},
		want: []string{"Deltas rv=11 a[Updated:a/11(t)]", "Synced", "Deltas rv=11 b[Sync:b]"},
	}, {
		name:  "a second resync does not duplicate queued Syncs",
		known: &known{pods: []*corev1.Pod{testkit.Pod("a", "1")}},
		before: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.Resync(ctx))
		},
		want: []string{"Deltas rv=10 a[Sync:a]"},
	}, {
		name:  "nothing happens while a replace is open",
		known: &known{pods: []*corev1.Pod{testkit.Pod("a", "1")}},
		before: func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.BeginReplace(ctx))
		},
		// The queue starts with InitialResourceVersion: no replace is
		// the initial list.
		want: []string{"ReplaceBegin"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, deltafifo.Options{
				Logger:                 ktesting.NewLogger(t, ktesting.NewConfig()),
				KnownObjects:           tc.known,
				InitialResourceVersion: "10",
				Transformer:            markTransformed,
			})
			if tc.before != nil {
				tc.before(t, q)
			}
			must(t, q.Resync(ctx))
			equalLines(t, "batches", drain(t, q, 10), tc.want)
		})
	}

	t.Run("without KnownObjects resync does nothing", func(t *testing.T) {
		q := newQueue(t, deltafifo.Options{})
		must(t, q.Resync(ctx))
		equalLines(t, "batches", drain(t, q, 10), nil)
	})
}

// markTransformed is a Transformer that labels pods (in place, as a
// TransformFunc may) so tests can see where it ran.
func markTransformed(obj interface{}) (interface{}, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p = p.DeepCopy()
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["transformed"] = "yes"
		return p, nil
	}
	return obj, nil
}

// TestTransformer checks where the Transformer is applied.
func TestTransformer(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, deltafifo.Options{Transformer: markTransformed})
	must(t, q.Add(ctx, testkit.Pod("a", "1")))
	must(t, q.Update(ctx, testkit.Pod("a", "2")))
	must(t, q.Delete(ctx, testkit.Pod("a", "3")))
	must(t, q.Delete(ctx, tomb("b", testkit.Pod("b", "0"))))
	must(t, q.BeginReplace(ctx))
	must(t, q.ReplacePage(ctx, []interface{}{testkit.Pod("c", "4")}))
	must(t, q.EndReplace(ctx, "5"))
	got := drain(t, q, 10)
	want := []string{
		"Deltas rv=3 a[Added:a/1(t) Updated:a/2(t) Deleted:a/3(t)] b[Deleted:tomb:0]",
		"ReplaceBegin", "ReplacePage c/4(t)", "ReplaceEnd rv=5",
	}
	equalLines(t, "batches", got, want)
}

// TestLongLivedSegment pops a deltas segment one key at a time while it
// keeps growing, far past the point where popped keys are compacted away,
// and checks order and safe resourceVersions throughout.
func TestLongLivedSegment(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, deltafifo.Options{})
	const queued, pops = 2000, 5000
	for i := range queued {
		must(t, q.Add(ctx, testkit.Pod("k"+strconv.Itoa(i), strconv.Itoa(i+1))))
	}
	for i := range pops {
		b := pop(t, q, 1)
		// k(i+1) entered right after k(i)'s event, whose RV is i+1.
		if len(b.Keys) != 1 || b.Keys[0] != "ns/k"+strconv.Itoa(i) || b.ResourceVersion != strconv.Itoa(i+1) {
			t.Fatalf("pop %d: %s, want k%d with rv %d", i, describe(b), i, i+1)
		}
		n := queued + i
		must(t, q.Add(ctx, testkit.Pod("k"+strconv.Itoa(n), strconv.Itoa(n+1))))
	}
	if got := q.Depth(); got != queued {
		t.Fatalf("Depth = %d, want %d", got, queued)
	}
}

// keysOnly is a KnownObjects whose keys no object has: Resync queues them
// as they are, without reading objects.
type keysOnly []string

func (k keysOnly) ListKeys() []string { return k }

// TestResyncKeysOnly checks that Sync deltas carry their key only, as a
// cache.ExplicitKey, whatever the key function would make of an object.
func TestResyncKeysOnly(t *testing.T) {
	q := newQueue(t, deltafifo.Options{KnownObjects: keysOnly{"a", "ns/b/c"}})
	if err := q.Resync(context.Background()); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	b := pop(t, q, 10)
	if len(b.Keys) != 2 || b.Keys[0] != "a" || b.Keys[1] != "ns/b/c" {
		t.Fatalf("Resync queued %s, want keys a and ns/b/c", describe(b))
	}
	for i, ds := range b.Deltas {
		if len(ds) != 1 || ds[0].Type != cache.Sync || ds[0].Object != cache.ExplicitKey(b.Keys[i]) {
			t.Errorf("deltas of %s = %v, want one Sync carrying the key", b.Keys[i], ds)
		}
	}
}
