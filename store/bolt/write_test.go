package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// withProcs runs the parallel path even on a machine with one CPU.
func withProcs(t *testing.T, n int) {
	t.Helper()
	prev := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
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
