package deltafifo_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// TestReplaceSegments covers the ordering of deltas around a replace,
// page splitting and AbortReplace.
func TestReplaceSegments(t *testing.T) {
	ctx := context.Background()
	var popped []string
	step := map[string]func(*testing.T, *deltafifo.Queue){
		"add a1":    func(t *testing.T, q *deltafifo.Queue) { must(t, q.Add(ctx, testkit.Pod("a", "1"))) },
		"add b2":    func(t *testing.T, q *deltafifo.Queue) { must(t, q.Add(ctx, testkit.Pod("b", "2"))) },
		"update a3": func(t *testing.T, q *deltafifo.Queue) { must(t, q.Update(ctx, testkit.Pod("a", "3"))) },
		"update a6": func(t *testing.T, q *deltafifo.Queue) { must(t, q.Update(ctx, testkit.Pod("a", "6"))) },
		"add c7":    func(t *testing.T, q *deltafifo.Queue) { must(t, q.Add(ctx, testkit.Pod("c", "7"))) },
		"begin":     func(t *testing.T, q *deltafifo.Queue) { must(t, q.BeginReplace(ctx)) },
		"page a3 b2 x1": func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.ReplacePage(ctx, []interface{}{testkit.Pod("a", "3"), testkit.Pod("b", "2"), testkit.Pod("x", "1")}))
		},
		"page y4": func(t *testing.T, q *deltafifo.Queue) {
			must(t, q.ReplacePage(ctx, []interface{}{testkit.Pod("y", "4")}))
		},
		"empty page": func(t *testing.T, q *deltafifo.Queue) { must(t, q.ReplacePage(ctx, []interface{}{})) },
		"end 5":      func(t *testing.T, q *deltafifo.Queue) { must(t, q.EndReplace(ctx, "5")) },
		"abort":      func(t *testing.T, q *deltafifo.Queue) { must(t, q.AbortReplace()) },
		"synced":     func(t *testing.T, q *deltafifo.Queue) { must(t, q.MarkSynced(ctx)) },
		"bookmark 4": func(t *testing.T, q *deltafifo.Queue) { must(t, q.Bookmark(ctx, "4")) },
		"pop 1":      func(t *testing.T, q *deltafifo.Queue) { popped = append(popped, describe(pop(t, q, 1))) },
		"pop 2":      func(t *testing.T, q *deltafifo.Queue) { popped = append(popped, describe(pop(t, q, 2))) },
	}
	tests := []struct {
		name  string
		steps []string
		max   int
		want  []string
	}{{
		name:  "deltas before a replace are popped first and never merged with deltas after it",
		steps: []string{"add a1", "add b2", "update a3", "begin", "page a3 b2 x1", "end 5", "update a6", "add c7"},
		max:   10,
		want: []string{
			"Deltas rv=3 a[Added:a/1 Updated:a/3] b[Added:b/2]",
			"ReplaceBegin",
			"ReplacePage a/3 b/2 x/1",
			"ReplaceEnd rv=5",
			"Deltas rv=7 a[Updated:a/6] c[Added:c/7]",
		},
	}, {
		name:  "keys after a replace record the list RV as prevRV",
		steps: []string{"begin", "end 5", "update a6", "add c7"},
		max:   1,
		want: []string{
			"ReplaceBegin initial",
			"ReplaceEnd rv=5 initial",
			"Deltas rv=6 a[Updated:a/6]",
			"Deltas rv=7 c[Added:c/7]",
		},
	}, {
		name:  "a bookmark before a replace is delivered before it",
		steps: []string{"add a1", "bookmark 4", "begin", "end 5"},
		max:   10,
		want:  []string{"Deltas rv=4 a[Added:a/1]", "ReplaceBegin", "ReplaceEnd rv=5"},
	}, {
		name:  "pages are split by max and never merged; empty pages are dropped",
		steps: []string{"begin", "page a3 b2 x1", "empty page", "page y4", "end 5"},
		max:   2,
		want: []string{
			"ReplaceBegin initial",
			"ReplacePage a/3 b/2 initial",
			"ReplacePage x/1 initial",
			"ReplacePage y/4 initial",
			"ReplaceEnd rv=5 initial",
		},
	}, {
		name:  "a replace aborted before its begin was popped vanishes, segment boundary included",
		steps: []string{"add a1", "begin", "page a3 b2 x1", "abort", "add b2"},
		max:   10,
		want:  []string{"Deltas rv=2 a[Added:a/1] b[Added:b/2]"},
	}, {
		name:  "a replace aborted after its begin was popped ends with an abort marker",
		steps: []string{"begin", "page a3 b2 x1", "pop 1", "pop 2", "page y4", "abort", "begin", "page y4", "end 5"},
		max:   10,
		want: []string{
			"ReplaceBegin initial",
			"ReplacePage a/3 b/2 initial",
			// the rest of the first page and the second page are dropped
			"ReplaceAbort initial",
			"ReplaceBegin initial",
			"ReplacePage y/4 initial",
			"ReplaceEnd rv=5 initial",
		},
	}, {
		name:  "the synced marker is ordered with deltas",
		steps: []string{"add a1", "synced", "update a3"},
		max:   10,
		want:  []string{"Deltas rv=1 a[Added:a/1]", "Synced", "Deltas rv=3 a[Updated:a/3]"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			popped = nil
			q := newQueue(t, deltafifo.Options{})
			for _, s := range tc.steps {
				f, ok := step[s]
				if !ok {
					t.Fatalf("unknown step %q", s)
				}
				f(t, q)
			}
			equalLines(t, "batches", append(popped, drain(t, q, tc.max)...), tc.want)
		})
	}
}

// TestAbortReplaceFreesCapacity checks that dropped pages give their room
// back.
func TestAbortReplaceFreesCapacity(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, deltafifo.Options{Capacity: 3})
	must(t, q.BeginReplace(ctx))
	must(t, q.ReplacePage(ctx, []interface{}{testkit.Pod("a", "1"), testkit.Pod("b", "2"), testkit.Pod("c", "3")}))
	if got := q.Depth(); got != 3 {
		t.Fatalf("Depth = %d, want 3", got)
	}
	must(t, q.AbortReplace())
	if got := q.Depth(); got != 0 {
		t.Fatalf("Depth after abort = %d, want 0", got)
	}
}

// TestHasSynced covers HasSynced and IsInInitialList for the ways a
// producer can start.
func TestHasSynced(t *testing.T) {
	ctx := context.Background()
	type step struct {
		do         string // a push, or "pop"
		wantSynced bool   // HasSynced after the step
		wantBatch  string // for "pop": the popped batch
	}
	push := map[string]func(*deltafifo.Queue) error{
		"add":      func(q *deltafifo.Queue) error { return q.Add(ctx, testkit.Pod("a", "1")) },
		"update":   func(q *deltafifo.Queue) error { return q.Update(ctx, testkit.Pod("a", "1")) },
		"delete":   func(q *deltafifo.Queue) error { return q.Delete(ctx, testkit.Pod("a", "1")) },
		"bookmark": func(q *deltafifo.Queue) error { return q.Bookmark(ctx, "2") },
		"resync":   func(q *deltafifo.Queue) error { return q.Resync(ctx) },
		"synced":   func(q *deltafifo.Queue) error { return q.MarkSynced(ctx) },
		"begin":    func(q *deltafifo.Queue) error { return q.BeginReplace(ctx) },
		"page":     func(q *deltafifo.Queue) error { return q.ReplacePage(ctx, []interface{}{testkit.Pod("b", "1")}) },
		"end":      func(q *deltafifo.Queue) error { return q.EndReplace(ctx, "3") },
		"abort":    func(q *deltafifo.Queue) error { return q.AbortReplace() },
	}
	tests := []struct {
		name string
		// initialRV is Options.InitialResourceVersion: the consumer's
		// state on a warm start.
		initialRV string
		steps     []step
	}{{
		name: "initial list: synced when its end is popped",
		steps: []step{
			{do: "begin"}, {do: "page"}, {do: "end"},
			{do: "pop", wantBatch: "ReplaceBegin initial"},
			{do: "pop", wantBatch: "ReplacePage b/1 initial"},
			{do: "pop", wantBatch: "ReplaceEnd rv=3 initial", wantSynced: true},
		},
	}, {
		name: "an add first means synced at once",
		steps: []step{
			{do: "add", wantSynced: true},
			{do: "begin", wantSynced: true}, {do: "end", wantSynced: true},
			{do: "pop", wantBatch: "Deltas rv=1 a[Added:a/1]", wantSynced: true},
			{do: "pop", wantBatch: "ReplaceBegin", wantSynced: true},
		},
	}, {
		name:  "an update first means synced at once",
		steps: []step{{do: "update", wantSynced: true}},
	}, {
		name:  "a delete first means synced at once",
		steps: []step{{do: "delete", wantSynced: true}},
	}, {
		name: "warm start: synced when the marker is popped; a later relist is not initial",
		steps: []step{
			{do: "synced"}, {do: "begin"}, {do: "end"},
			{do: "pop", wantBatch: "Synced", wantSynced: true},
			{do: "pop", wantBatch: "ReplaceBegin", wantSynced: true},
		},
	}, {
		name:      "warm start: the catch-up's events do not complete the sync, the marker does",
		initialRV: "1",
		steps: []step{
			{do: "add"}, {do: "update"}, {do: "delete"}, {do: "synced"},
			{do: "pop", wantBatch: "Deltas rv=1 a[Added:a/1 Updated:a/1 Deleted:a/1]"},
			{do: "pop", wantBatch: "Synced", wantSynced: true},
		},
	}, {
		name:      "warm start: a relist after a 410 completes the sync but is not initial",
		initialRV: "1",
		steps: []step{
			{do: "begin"}, {do: "page"}, {do: "end"},
			{do: "pop", wantBatch: "ReplaceBegin"},
			{do: "pop", wantBatch: "ReplacePage b/1"},
			{do: "pop", wantBatch: "ReplaceEnd rv=3", wantSynced: true},
		},
	}, {
		name:      "warm start: a relist retried after an aborted one is not initial",
		initialRV: "1",
		steps: []step{
			{do: "begin"}, {do: "pop", wantBatch: "ReplaceBegin"},
			{do: "abort"}, {do: "begin"}, {do: "end"},
			{do: "pop", wantBatch: "ReplaceAbort"},
			{do: "pop", wantBatch: "ReplaceBegin"},
			{do: "pop", wantBatch: "ReplaceEnd rv=3", wantSynced: true},
		},
	}, {
		name: "a relist retried after an aborted initial one is initial",
		steps: []step{
			{do: "begin"}, {do: "pop", wantBatch: "ReplaceBegin initial"},
			{do: "abort"}, {do: "add"}, // an add after a relist began completes nothing
			{do: "begin"}, {do: "end"},
			{do: "pop", wantBatch: "ReplaceAbort initial"},
			{do: "pop", wantBatch: "Deltas rv=1 a[Added:a/1]"},
			{do: "pop", wantBatch: "ReplaceBegin initial"},
			{do: "pop", wantBatch: "ReplaceEnd rv=3 initial", wantSynced: true},
		},
	}, {
		name: "a bookmark or a resync first does not complete the sync",
		steps: []step{
			{do: "bookmark"}, {do: "resync"}, {do: "begin"}, {do: "end"},
			{do: "pop", wantBatch: "Deltas rv=2 k[Sync:k]"},
			{do: "pop", wantBatch: "ReplaceBegin initial"},
			{do: "pop", wantBatch: "ReplaceEnd rv=3 initial", wantSynced: true},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, deltafifo.Options{KnownObjects: &known{pods: []*corev1.Pod{testkit.Pod("k", "9")}}, InitialResourceVersion: tc.initialRV})
			checker := q.HasSyncedChecker()
			if q.HasSynced() || cache.IsDone(checker) {
				t.Fatal("a new queue is synced")
			}
			for i, s := range tc.steps {
				if s.do == "pop" {
					if got := describe(pop(t, q, 10)); got != s.wantBatch {
						t.Fatalf("step %d: popped %q, want %q", i, got, s.wantBatch)
					}
				} else if err := push[s.do](q); err != nil {
					t.Fatalf("step %d (%s): %v", i, s.do, err)
				}
				if got := q.HasSynced(); got != s.wantSynced {
					t.Fatalf("step %d (%s): HasSynced = %v, want %v", i, s.do, got, s.wantSynced)
				}
				if got := cache.IsDone(checker); got != s.wantSynced {
					t.Fatalf("step %d (%s): checker done = %v, want %v", i, s.do, got, s.wantSynced)
				}
			}
			if checker.Name() != deltafifo.DefaultName {
				t.Errorf("checker name %q, want %q", checker.Name(), deltafifo.DefaultName)
			}
		})
	}
}
