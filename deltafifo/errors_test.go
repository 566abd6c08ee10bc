package deltafifo_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestNewValidatesOptions(t *testing.T) {
	_, err := deltafifo.New(deltafifo.Options{Capacity: -1})
	if !errors.Is(err, deltafifo.ErrInvalidArgument) {
		t.Fatalf("New(Capacity: -1) = %v, want ErrInvalidArgument", err)
	}
}

// TestErrors checks that bad input and calls out of order get a clear,
// wrapped sentinel error and queue nothing.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	failing := func(interface{}) (interface{}, error) { return nil, errors.New("boom") }
	returnsNil := func(interface{}) (interface{}, error) { return nil, nil }
	var nilPod *corev1.Pod
	beginReplace := func(t *testing.T, q *deltafifo.Queue) { must(t, q.BeginReplace(ctx)) }

	tests := []struct {
		name   string
		opts   deltafifo.Options
		before func(*testing.T, *deltafifo.Queue)
		call   func(*deltafifo.Queue) error
		want   error
	}{
		{name: "add nil", call: func(q *deltafifo.Queue) error { return q.Add(ctx, nil) }, want: deltafifo.ErrNilObject},
		{name: "update typed nil", call: func(q *deltafifo.Queue) error { return q.Update(ctx, nilPod) }, want: deltafifo.ErrNilObject},
		{name: "delete nil", call: func(q *deltafifo.Queue) error { return q.Delete(ctx, nil) }, want: deltafifo.ErrNilObject},
		{name: "transformer returns nil", opts: deltafifo.Options{Transformer: returnsNil},
			call: func(q *deltafifo.Queue) error { return q.Add(ctx, testkit.Pod("a", "1")) }, want: deltafifo.ErrNilObject},
		{name: "replace page with a nil object", before: beginReplace,
			call: func(q *deltafifo.Queue) error { return q.ReplacePage(ctx, []interface{}{testkit.Pod("a", "1"), nil}) }, want: deltafifo.ErrNilObject},
		{name: "pop max 0", call: func(q *deltafifo.Queue) error { _, err := q.Pop(ctx, 0); return err }, want: deltafifo.ErrInvalidArgument},
		{name: "empty bookmark", call: func(q *deltafifo.Queue) error { return q.Bookmark(ctx, "") }, want: deltafifo.ErrInvalidArgument},
		{name: "begin replace twice", before: beginReplace,
			call: func(q *deltafifo.Queue) error { return q.BeginReplace(ctx) }, want: deltafifo.ErrReplaceInProgress},
		{name: "add during replace", before: beginReplace,
			call: func(q *deltafifo.Queue) error { return q.Add(ctx, testkit.Pod("a", "1")) }, want: deltafifo.ErrReplaceInProgress},
		{name: "delete during replace", before: beginReplace,
			call: func(q *deltafifo.Queue) error { return q.Delete(ctx, testkit.Pod("a", "1")) }, want: deltafifo.ErrReplaceInProgress},
		{name: "bookmark during replace", before: beginReplace,
			call: func(q *deltafifo.Queue) error { return q.Bookmark(ctx, "3") }, want: deltafifo.ErrReplaceInProgress},
		{name: "mark synced during replace", before: beginReplace,
			call: func(q *deltafifo.Queue) error { return q.MarkSynced(ctx) }, want: deltafifo.ErrReplaceInProgress},
		{name: "page without replace",
			call: func(q *deltafifo.Queue) error { return q.ReplacePage(ctx, []interface{}{testkit.Pod("a", "1")}) }, want: deltafifo.ErrNoReplace},
		{name: "empty page without replace",
			call: func(q *deltafifo.Queue) error { return q.ReplacePage(ctx, nil) }, want: deltafifo.ErrNoReplace},
		{name: "end without replace", call: func(q *deltafifo.Queue) error { return q.EndReplace(ctx, "1") }, want: deltafifo.ErrNoReplace},
		{name: "abort without replace", call: func(q *deltafifo.Queue) error { return q.AbortReplace() }, want: deltafifo.ErrNoReplace},
		{name: "add after close", before: func(_ *testing.T, q *deltafifo.Queue) { q.Close() },
			call: func(q *deltafifo.Queue) error { return q.Add(ctx, testkit.Pod("a", "1")) }, want: deltafifo.ErrClosed},
		{name: "begin replace after close", before: func(_ *testing.T, q *deltafifo.Queue) { q.Close() },
			call: func(q *deltafifo.Queue) error { return q.BeginReplace(ctx) }, want: deltafifo.ErrClosed},
		{name: "abort after close", before: func(t *testing.T, q *deltafifo.Queue) { beginReplace(t, q); q.Close() },
			call: func(q *deltafifo.Queue) error { return q.AbortReplace() }, want: deltafifo.ErrClosed},
		{name: "pop after close", before: func(_ *testing.T, q *deltafifo.Queue) { q.Close() },
			call: func(q *deltafifo.Queue) error { _, err := q.Pop(ctx, 1); return err }, want: deltafifo.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, tc.opts)
			if tc.before != nil {
				tc.before(t, q)
			}
			depth := q.Depth()
			if err := tc.call(q); !errors.Is(err, tc.want) {
				t.Fatalf("got error %v, want %v", err, tc.want)
			}
			if got := q.Depth(); got != depth {
				t.Errorf("Depth changed from %d to %d by a failed call", depth, got)
			}
		})
	}

	t.Run("key errors are cache.KeyError", func(t *testing.T) {
		q := newQueue(t, deltafifo.Options{})
		err := q.Add(ctx, "not an object")
		var ke cache.KeyError
		if !errors.As(err, &ke) || ke.Obj != "not an object" {
			t.Fatalf("Add(string) = %v, want a cache.KeyError for the object", err)
		}
		q2 := newQueue(t, deltafifo.Options{})
		must(t, q2.BeginReplace(ctx))
		err = q2.ReplacePage(ctx, []interface{}{testkit.Pod("a", "1"), 42})
		if !errors.As(err, &ke) {
			t.Fatalf("ReplacePage with an int = %v, want a cache.KeyError", err)
		}
		if q2.Depth() != 0 {
			t.Errorf("a failed page queued %d objects", q2.Depth())
		}
	})

	t.Run("transformer errors are wrapped and queue nothing", func(t *testing.T) {
		q := newQueue(t, deltafifo.Options{Transformer: failing})
		err := q.Update(ctx, testkit.Pod("a", "1"))
		if err == nil || err.Error() != `update: "ns/a": transform: boom` {
			t.Fatalf("Update = %v, want the transformer's error with the key", err)
		}
		equalLines(t, "batches", drain(t, q, 10), nil)
	})
}
