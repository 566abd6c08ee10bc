package bolt

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
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
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: panicCodec{&armed}, DecodedObjects: -1})
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
