package deltafifo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tomb returns a tombstone for ns/<name> whose last known state is last
// (nil for none).
func tomb(name string, last *corev1.Pod) cache.DeletedFinalStateUnknown {
	t := cache.DeletedFinalStateUnknown{Key: "ns/" + name}
	if last != nil {
		t.Obj = last
	}
	return t
}

func newQueue(t *testing.T, opts deltafifo.Options) *deltafifo.Queue {
	t.Helper()
	q, err := deltafifo.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(q.Close)
	return q
}

// describeObj renders an object as name/rv, a tombstone as tomb:<rv of its
// object> (tomb:- when it has none).
func describeObj(obj interface{}) string {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		if p, ok := o.Obj.(*corev1.Pod); ok {
			return "tomb:" + p.ResourceVersion
		}
		return "tomb:-"
	case cache.ExplicitKey:
		return strings.TrimPrefix(string(o), "ns/")
	case *corev1.Pod:
		s := o.Name + "/" + o.ResourceVersion
		if o.Labels["transformed"] == "yes" {
			s += "(t)"
		}
		return s
	default:
		return fmt.Sprintf("%v", obj)
	}
}

// describe renders a batch compactly, for example
// "Deltas rv=4 a[Added:a/1 Updated:a/3] b[Added:b/2]" or
// "ReplacePage a/1 b/2 initial".
func describe(b deltafifo.Batch) string {
	var sb strings.Builder
	sb.WriteString(b.Kind.String())
	if b.Kind == deltafifo.KindDeltas || b.Kind == deltafifo.KindReplaceEnd {
		fmt.Fprintf(&sb, " rv=%s", b.ResourceVersion)
	}
	if len(b.Keys) != len(b.Deltas) {
		fmt.Fprintf(&sb, " BROKEN(%d keys, %d deltas)", len(b.Keys), len(b.Deltas))
	}
	for i, k := range b.Keys {
		fmt.Fprintf(&sb, " %s[", strings.TrimPrefix(k, "ns/"))
		for j, d := range b.Deltas[i] {
			if j > 0 {
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%s:%s", d.Type, describeObj(d.Object))
		}
		sb.WriteByte(']')
	}
	for _, o := range b.Objects {
		sb.WriteString(" " + describeObj(o))
	}
	if b.IsInInitialList {
		sb.WriteString(" initial")
	}
	return sb.String()
}

// drain closes q and pops until ErrClosed, with batches of at most max,
// returning the described batches.
func drain(t *testing.T, q *deltafifo.Queue, max int) []string {
	t.Helper()
	return popClosed(t, q, max, describe)
}

// popClosed closes q and pops until ErrClosed, with batches of at most
// max, returning each batch as f makes it.
func popClosed[T any](t *testing.T, q *deltafifo.Queue, max int, f func(deltafifo.Batch) T) []T {
	t.Helper()
	q.Close()
	var out []T
	for {
		b, err := q.Pop(context.Background(), max)
		if errors.Is(err, deltafifo.ErrClosed) {
			return out
		}
		if err != nil {
			t.Fatalf("Pop: %v", err)
		}
		out = append(out, f(b))
	}
}

// pop pops one batch, failing the test on error.
func pop(t *testing.T, q *deltafifo.Queue, max int) deltafifo.Batch {
	t.Helper()
	b, err := q.Pop(context.Background(), max)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// known is a KnownObjects over a fixed list of pods, in order. Resync
// reads their keys only.
type known struct {
	pods []*corev1.Pod
}

func (k *known) ListKeys() []string {
	keys := make([]string, len(k.pods))
	for i, p := range k.pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	return keys
}
