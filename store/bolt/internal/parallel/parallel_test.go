package parallel

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// withProcs runs the parallel path even on a machine with one CPU.
func withProcs(t *testing.T, n int) {
	t.Helper()
	prev := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

func TestForEachParallel(t *testing.T) {
	withProcs(t, 4)
	for _, n := range []int{0, 1, Min - 1, Min * 2, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var calls atomic.Int64
			seen := make([]atomic.Int32, n)
			errs := ForEach(n, func(i int) error {
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
			got := FirstError(errs)
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
	ForEach(Min*8, func(i int) error {
		if i == Min*5 {
			panic("boom")
		}
		return nil
	})
	t.Fatal("forEachParallel returned instead of panicking")
}
