package storebench

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/memory"
)

func TestRelistPods(t *testing.T) {
	ctx := context.Background()
	s, err := memory.New(memory.Options{Indexers: Indexers()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(podgen.Pod(10_000)); err != nil { // gone after the relist
		t.Fatal(err)
	}
	var seen []int
	err = RelistPods(ctx, s, 7, 3, "8", func(i int, p *corev1.Pod) {
		seen = append(seen, i)
		p.Labels = map[string]string{"relisted": "yes"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 7 || seen[0] != 0 || seen[6] != 6 {
		t.Errorf("each saw pods %v, want 0..6", seen)
	}
	if got := s.LastStoreSyncResourceVersion(); got != "8" {
		t.Errorf("resourceVersion %q, want 8", got)
	}
	keys := s.ListKeys()
	if len(keys) != 7 {
		t.Fatalf("%d keys after the relist, want 7: %v", len(keys), keys)
	}
	ns, name := podgen.Key(3)
	obj, ok, err := s.GetByKey(ns + "/" + name)
	if err != nil || !ok || obj.(*corev1.Pod).Labels["relisted"] != "yes" {
		t.Errorf("pod 3: %v, %v, %v; want it with each's label", obj, ok, err)
	}
}

// A failed page aborts the relist: the store keeps what it had.
func TestRelistPodsAbortsOnError(t *testing.T) {
	ctx := context.Background()
	s, err := memory.New(memory.Options{Indexers: Indexers()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Replace([]interface{}{podgen.Pod(0)}, "1"); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("page refused")
	if err := RelistPods(ctx, failingAdd{s, fail}, 5, 2, "9", nil); !errors.Is(err, fail) {
		t.Fatalf("RelistPods = %v, want %v", err, fail)
	}
	if got := s.LastStoreSyncResourceVersion(); got != "1" {
		t.Errorf("resourceVersion %q after the failed relist, want 1", got)
	}
	if err := RelistPods(ctx, s, 0, 2, "9", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("RelistPods of no pods = %v, want ErrInvalidArgument", err)
	}
}

// failingAdd is a store whose relists refuse their first page.
type failingAdd struct {
	s   store.Store
	err error
}

func (f failingAdd) BeginReplace(ctx context.Context) (store.Replace, error) {
	r, err := f.s.BeginReplace(ctx)
	return failingReplace{r, f.err}, err
}

type failingReplace struct {
	store.Replace
	err error
}

func (f failingReplace) Add(context.Context, ...interface{}) error { return f.err }
