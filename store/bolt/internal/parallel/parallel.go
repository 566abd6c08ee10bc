// Package parallel runs the independent steps of the bolt store's writes
// and reads on every core: the encoding of a batch's objects and the
// decoding of a read's chunk, which need no lock and are most of their CPU.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each goroutine gets at least Min items (so a batch is split from 2*Min
// on): below that the goroutines cost more than they save. The
// measurements are in docs/design/bolt.md.
const (
	Min   = 64
	chunk = 16 // items a worker claims at a time
)

// ForEach calls fn(i) for every i in [0, n), on up to GOMAXPROCS
// goroutines when n is large, and returns the errors of the calls that
// failed, indexed like the items (nil if none failed). fn must be safe to
// call concurrently for distinct i. Every item is processed even after a
// failure, so that the outcome does not depend on scheduling. A panic in fn
// is raised again in the caller's goroutine (the first one recovered, if
// several items panic), as a sequential loop would raise it, instead of
// ending the process from a worker.
func ForEach(n int, fn func(i int) error) []error {
	return ForEachN(runtime.GOMAXPROCS(0), n, fn)
}

// ForEachN is ForEach on up to maxWorkers goroutines.
func ForEachN(maxWorkers, n int, fn func(i int) error) []error {
	workers := min(maxWorkers, n/Min)
	var errs []error
	var mu sync.Mutex // guards errs
	record := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if errs == nil {
			errs = make([]error, n)
		}
		errs[i] = err
	}
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				record(i, err)
			}
		}
		return errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicked atomic.Pointer[workerPanic]
	for range workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					panicked.CompareAndSwap(nil, &workerPanic{r})
					next.Store(int64(n)) // the others stop at their next claim
				}
			}()
			for {
				start := int(next.Add(chunk)) - chunk
				if start >= n {
					return
				}
				for i := start; i < min(start+chunk, n); i++ {
					if err := fn(i); err != nil {
						record(i, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if p := panicked.Load(); p != nil {
		panic(p.value)
	}
	return errs
}

// workerPanic carries a worker's panic value to the caller.
type workerPanic struct{ value any }

// FirstError returns the first non-nil error of errs, the one a sequential
// loop would have stopped at.
func FirstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
