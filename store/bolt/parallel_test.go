package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// withProcs runs the parallel path even on a machine with one CPU.
func withProcs(t *testing.T, n int) {
	t.Helper()
	prev := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

func TestForEachParallel(t *testing.T) {
	withProcs(t, 4)
	for _, n := range []int{0, 1, parallelMin - 1, parallelMin * 2, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var calls atomic.Int64
			seen := make([]atomic.Int32, n)
			errs := forEachParallel(n, func(i int) error {
				calls.Add(1)
				seen[i].Add(1)
				if i%97 == 13 {
					return fmt.Errorf("item %d", i)
				}
				return nil
			})
			if got := calls.Load(); got != int64(n) {
				t.Fatalf("fn called %d times, want %d", got, n)
			}
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("item %d processed %d times", i, c)
				}
			}
			var want error
			if n > 13 {
				want = fmt.Errorf("item 13")
			}
			got := firstError(errs)
			if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
				t.Fatalf("firstError = %v, want %v", got, want)
			}
			for i, err := range errs {
				if (err != nil) != (i%97 == 13) {
					t.Fatalf("errs[%d] = %v", i, err)
				}
			}
		})
	}
}

func TestForEachParallelPanicReachesCaller(t *testing.T) {
	withProcs(t, 4)
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the worker's panic value", r)
		}
	}()
	forEachParallel(parallelMin*8, func(i int) error {
		if i == parallelMin*5 {
			panic("boom")
		}
		return nil
	})
	t.Fatal("forEachParallel returned instead of panicking")
}

// A large batch is encoded on several goroutines; an object that fails in
// the middle must still fail the whole batch with that object's error and
// leave the store as it was.
func TestApplyLargeBatchFailsWhole(t *testing.T) {
	withProcs(t, 4)
	db := openDB(t, tempPath(t), Options{})
	s := openPods(t, db, namespaceIndexers())
	ctx := context.Background()
	const n = 400
	txns := make([]cache.Transaction, 0, n)
	for i := range n {
		var obj interface{} = mkPod("ns", fmt.Sprintf("p-%04d", i), fmt.Sprint(i+1))
		if i == 250 || i == 390 {
			obj = "not an object" // fails the key function
		}
		txns = append(txns, cache.Transaction{Type: cache.TransactionTypeAdd, Object: obj})
	}
	err := s.Apply(ctx, txns, "500")
	var kerr cache.KeyError
	if !errors.As(err, &kerr) || kerr.Obj != "not an object" || !strings.Contains(err.Error(), "transaction 250 ") {
		t.Fatalf("Apply = %v, want the key error of transaction 250", err)
	}
	if got := len(s.ListKeys()); got != 0 {
		t.Fatalf("store holds %d keys after a failed batch, want 0", got)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "" {
		t.Fatalf("RV = %q after a failed batch, want none", rv)
	}
	txns[250].Object = mkPod("ns", "p-0250", "251")
	txns[390].Object = mkPod("ns", "p-0390", "391")
	if err := s.Apply(ctx, txns, "500"); err != nil {
		t.Fatal(err)
	}
	if got := len(s.ListKeys()); got != n {
		t.Fatalf("store holds %d keys, want %d", got, n)
	}
	verifyClean(t, db)
}
