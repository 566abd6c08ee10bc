package memory_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/memory"
)

// ResourceVersionOf reports the resourceVersion an object had when it was
// written, by every write path, even after the shared object was mutated
// (by a handler, wrongly): the informer compares events with it.
func TestResourceVersionRecordedAtWrite(t *testing.T) {
	ctx := context.Background()
	writes := []struct {
		name  string
		write func(s store.Store, obj interface{}) error
	}{
		{"Add", func(s store.Store, obj interface{}) error { return s.Add(obj) }},
		{"Update", func(s store.Store, obj interface{}) error { return s.Update(obj) }},
		{"Apply", func(s store.Store, obj interface{}) error {
			return s.Apply(ctx, []cache.Transaction{{Type: cache.TransactionTypeAdd, Object: obj}}, "")
		}},
		{"Transaction", func(s store.Store, obj interface{}) error {
			if err := s.Transaction(cache.Transaction{Type: cache.TransactionTypeUpdate, Object: obj}); err != nil {
				return err
			}
			return nil
		}},
		{"Replace", func(s store.Store, obj interface{}) error { return s.Replace([]interface{}{obj}, "5") }},
		{"BeginReplace", func(s store.Store, obj interface{}) error {
			r, err := s.BeginReplace(ctx)
			if err != nil {
				return err
			}
			if err := r.Add(ctx, obj); err != nil {
				return err
			}
			return r.Commit(ctx, "5")
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			s := newStore(t, nil)
			if err := w.write(s, testkit.Pod("a", "5")); err != nil {
				t.Fatal(err)
			}
			got, ok, err := s.GetByKey("ns/a")
			if err != nil || !ok {
				t.Fatalf("GetByKey = %v, %v, %v", got, ok, err)
			}
			got.(interface{ SetResourceVersion(string) }).SetResourceVersion("100")
			if rv, ok, err := s.ResourceVersionOf("ns/a"); err != nil || !ok || rv != "5" {
				t.Fatalf("ResourceVersionOf after the shared object was mutated = %q, %v, %v; want 5", rv, ok, err)
			}
			// A later write records the new object's resourceVersion.
			if err := s.Update(testkit.Pod("a", "7")); err != nil {
				t.Fatal(err)
			}
			if rv, _, _ := s.ResourceVersionOf("ns/a"); rv != "7" {
				t.Fatalf("ResourceVersionOf after an update = %q, want 7", rv)
			}
		})
	}
}

// A relist's Changes cannot compare objects without metadata (a transform
// may store anything): such a key in both contents is a change, as
// client-go's informer tells such a relisted object as an update.
func TestChangesOfObjectsWithoutMetadata(t *testing.T) {
	ctx := context.Background()
	s := mustNew(t, memory.Options{KeyFunc: func(obj interface{}) (string, error) {
		return obj.(string)[:1], nil
	}})
	if err := s.Replace([]interface{}{"a1", "b1"}, "5"); err != nil {
		t.Fatal(err)
	}
	r, err := s.BeginReplace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []interface{}{"a2", "b1"} {
		if err := r.Add(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Commit(ctx, "6"); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := r.Changes(ctx, func(c store.Change) error {
		got = append(got, fmt.Sprintf("%s:%v->%v", c.Key, c.Old, c.New))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a:a1->a2", "b:b1->b1"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if err := r.Release(); err != nil {
		t.Fatal(err)
	}
}
