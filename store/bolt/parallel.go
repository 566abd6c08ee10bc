package bolt

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Encoding is most of the CPU a write spends outside bbolt's commit (about
// 10 µs for a podgen pod in protobuf) and needs no lock, so a large batch
// is encoded on every core: on 2 cores, writing 100k podgen pods in key
// order in batches of 500 went from 32k to 42k pods/s. Each goroutine gets at least parallelMin
// items (so a batch is split from 2*parallelMin on): below that the
// goroutines cost more than they save.
const (
	parallelMin   = 64
	parallelChunk = 16 // items a worker claims at a time
)

// forEachParallel calls fn(i) for every i in [0, n), on up to GOMAXPROCS
// goroutines when n is large, and returns the errors of the calls that
// failed, indexed like the items (nil if none failed). fn must be safe to
// call concurrently for distinct i. Every item is processed even after a
// failure, so that the outcome does not depend on scheduling. A panic in fn
// is raised again in the caller's goroutine (the first one recovered, if
// several items panic), as a sequential loop would raise it, instead of
// ending the process from a worker.
func forEachParallel(n int, fn func(i int) error) []error {
	return forEachParallelN(runtime.GOMAXPROCS(0), n, fn)
}

// forEachParallelN is forEachParallel on up to maxWorkers goroutines.
func forEachParallelN(maxWorkers, n int, fn func(i int) error) []error {
	workers := min(maxWorkers, n/parallelMin)
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
				start := int(next.Add(parallelChunk)) - parallelChunk
				if start >= n {
					return
				}
				for i := start; i < min(start+parallelChunk, n); i++ {
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

// firstError returns the first non-nil error of errs, the one a sequential
// loop would have stopped at.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
