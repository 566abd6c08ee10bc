package deltafifo_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

type recordingMetrics struct {
	depths []int
	adds   int
}

func (m *recordingMetrics) Depth(n int) { m.depths = append(m.depths, n) }
func (m *recordingMetrics) Adds(n int)  { m.adds += n }

// TestMetrics checks that the depth gauge follows every change and that
// adds count accepted deltas and page objects.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	m := &recordingMetrics{}
	q := newQueue(t, deltafifo.Options{Metrics: m})
	must(t, q.Add(ctx, testkit.Pod("a", "1")))                                               // 1
	must(t, q.Delete(ctx, testkit.Pod("a", "2")))                                            // 2
	must(t, q.Delete(ctx, tomb("a", nil)))                                                   // deduplicated: no change
	must(t, q.Bookmark(ctx, "3"))                                                            // no change
	pop(t, q, 10)                                                                            // 0
	must(t, q.BeginReplace(ctx))                                                             // no change
	must(t, q.ReplacePage(ctx, []interface{}{testkit.Pod("b", "1"), testkit.Pod("c", "1")})) // 2
	pop(t, q, 10)                                                                            // begin: no change
	pop(t, q, 1)                                                                             // 1
	must(t, q.AbortReplace())                                                                // 0
	if want := []int{1, 2, 0, 2, 1, 0}; !slices.Equal(m.depths, want) {
		t.Errorf("depths %v, want %v", m.depths, want)
	}
	if m.adds != 4 {
		t.Errorf("adds %d, want 4", m.adds)
	}
}

func TestBatchLenAndKindString(t *testing.T) {
	tests := []struct {
		b        deltafifo.Batch
		wantLen  int
		wantKind string
	}{
		{deltafifo.Batch{Kind: deltafifo.KindDeltas, Keys: []string{"a", "b"}, Deltas: make([]cache.Deltas, 2)}, 2, "Deltas"},
		{deltafifo.Batch{Kind: deltafifo.KindReplacePage, Objects: []interface{}{testkit.Pod("a", "1")}}, 1, "ReplacePage"},
		{deltafifo.Batch{Kind: deltafifo.KindReplaceAbort}, 0, "ReplaceAbort"},
		{deltafifo.Batch{Kind: deltafifo.Kind(42)}, 0, "Kind(42)"},
	}
	for _, tc := range tests {
		t.Run(tc.wantKind, func(t *testing.T) {
			if got := tc.b.Len(); got != tc.wantLen {
				t.Errorf("Len = %d, want %d", got, tc.wantLen)
			}
			if got := tc.b.Kind.String(); got != tc.wantKind {
				t.Errorf("String = %q, want %q", got, tc.wantKind)
			}
		})
	}
}
