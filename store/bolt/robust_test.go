package bolt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// panicCodec is the pods codec whose Decode panics on demand, standing in
// for a bbolt panic inside a transaction.
type panicCodec struct{ armed *bool }

func (panicCodec) Name() string { return podCodec.Name() }
func (panicCodec) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	return podCodec.Encode(dst, obj)
}
func (c panicCodec) Decode(data []byte) (runtime.Object, error) {
	if *c.armed {
		panic("page of unknown type")
	}
	return podCodec.Decode(data)
}

// TestPanicInTransaction checks that a panic inside a transaction becomes
// an error wrapping ErrCorrupt, the transaction is released and the store
// keeps working.
func TestPanicInTransaction(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	armed := false
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: panicCodec{&armed}, HotBytes: ptrTo[int64](0)})
	must(t, err)
	must(t, s.Add(mkPod("ns", "a", "1")))
	armed = true
	if _, _, err := s.GetByKey("ns/a"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("GetByKey with a panicking decode = %v, want ErrCorrupt", err)
	}
	armed = false
	// The read transaction was released: a write (which needs the
	// writer lock and, to grow the file, the mapping lock) goes through.
	must(t, s.Apply(context.Background(), podTxns(0, 50, "2"), "2"))
	if _, ok, err := s.GetByKey("ns/a"); !ok || err != nil {
		t.Errorf("GetByKey after the panic = %v, %v", ok, err)
	}
}

// TestScanFuncMayReadWhileFileGrows checks that a ScanFunc runs outside any
// read transaction: a write that grows (and so remaps) the file completes
// while the scan is in progress, and the function can then read the store.
// Holding a read transaction across the function would deadlock here:
// bbolt's remap waits for open read transactions.
func TestScanFuncMayReadWhileFileGrows(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Apply(ctx, podTxns(0, 10, "1"), "1"))
	grown := false
	calls := 0
	err := s.Scan(ctx, func(key string, _ interface{}) error {
		calls++
		if !grown {
			grown = true
			done := make(chan error)
			go func() { done <- s.Apply(ctx, podTxns(1000, 3000, "2"), "2") }()
			if err := <-done; err != nil {
				return fmt.Errorf("write during the scan: %w", err)
			}
		}
		if _, ok, err := s.GetByKey(key); !ok || err != nil {
			return fmt.Errorf("GetByKey(%s) during the scan = %v, %v", key, ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 10 {
		t.Errorf("Scan made %d calls, want at least the 10 objects it started with", calls)
	}
	if st := mustState(t, s); st.Objects != 2010 {
		t.Errorf("objects = %d, want 2010", st.Objects)
	}
}

// TestKeyFunctionPanicIsKeyError passes objects that make the key function
// panic (a typed nil pointer, which client-go's key functions dereference)
// to every method that computes a key: each returns a cache.KeyError and
// leaves the store (items, RV, file) unchanged, where client-go crashes.
func TestKeyFunctionPanicIsKeyError(t *testing.T) {
	ctx := context.Background()
	var nilPod *corev1.Pod
	cases := []struct {
		name string
		opts ResourceOptions
		call func(s *Store) error
	}{
		{"Add", ResourceOptions{}, func(s *Store) error { return s.Add(nilPod) }},
		{"Update", ResourceOptions{}, func(s *Store) error { return s.Update(nilPod) }},
		{"Delete", ResourceOptions{}, func(s *Store) error { return s.Delete(nilPod) }},
		{"Get", ResourceOptions{}, func(s *Store) error { _, _, err := s.Get(nilPod); return err }},
		{"Replace", ResourceOptions{}, func(s *Store) error {
			return s.Replace([]interface{}{mkPod("ns", "b", "2"), nilPod}, "3")
		}},
		{"Apply", ResourceOptions{}, func(s *Store) error {
			return s.Apply(ctx, []cache.Transaction{
				{Type: cache.TransactionTypeAdd, Object: mkPod("ns", "b", "2")},
				{Type: cache.TransactionTypeAdd, Object: nilPod},
			}, "3")
		}},
		{"Transaction", ResourceOptions{}, func(s *Store) error {
			terr := s.Transaction(cache.Transaction{Type: cache.TransactionTypeUpdate, Object: nilPod})
			if terr == nil || len(terr.Errors) != 1 || len(terr.SuccessfulIndices) != 0 {
				return fmt.Errorf("Transaction = %v, want one error and no success", terr)
			}
			return terr.Errors[0]
		}},
		{"panicking key function", ResourceOptions{KeyFunc: func(obj interface{}) (string, error) {
			if p, ok := obj.(*corev1.Pod); ok && p.Name == "boom" {
				panic("bug in the key function")
			}
			return cache.MetaNamespaceKeyFunc(obj)
		}}, func(s *Store) error { return s.Add(mkPod("ns", "boom", "2")) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
			opts := tc.opts
			opts.Identity, opts.Codec = podsID, podCodec
			s, err := db.Resource(ctx, opts)
			must(t, err)
			must(t, s.Apply(ctx, []cache.Transaction{{Type: cache.TransactionTypeAdd, Object: mkPod("ns", "a", "1")}}, "1"))
			err = tc.call(s)
			if !errors.As(err, new(cache.KeyError)) {
				t.Fatalf("got %v, want a cache.KeyError", err)
			}
			if keys := s.ListKeys(); !slices.Equal(keys, []string{"ns/a"}) || s.LastStoreSyncResourceVersion() != "1" {
				t.Fatalf("the failed call changed the store: keys %q, rv %q", keys, s.LastStoreSyncResourceVersion())
			}
			// The store keeps working.
			must(t, s.Add(mkPod("ns", "c", "4")))
			verifyClean(t, db)
		})
	}
}
