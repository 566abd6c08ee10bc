package syncstate

import (
	"sync"
	"sync/atomic"
	"time"
)

// Flusher flushes a SyncOnClose file periodically. Nothing else calls
// fsync while such a file is open, and the kernel reports a failed
// write-back of a page only to the next fsync (once per open file).
// Without one the error would surface at Close, and a writer killed before
// Close would leave a file that the next Open in the same boot trusts
// although pages of it never reached the disk. A failure is recorded in
// the state file at once (Unflushed: the next Open relists) by the
// caller's function, and remembered (Failed), so that Close never records
// the file closed after it.
type Flusher struct {
	flush  func() error
	failed func(error)
	done   chan struct{}
	wg     sync.WaitGroup
	fail   atomic.Bool // a flush failed: the file is unflushed for good
}

// StartFlusher calls flush every interval until Stop; the first error is
// given to failed, and no flush follows it.
func StartFlusher(every time.Duration, flush func() error, failed func(error)) *Flusher {
	f := &Flusher{flush: flush, failed: failed, done: make(chan struct{})}
	f.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-f.done:
				return
			case <-t.C:
				f.flushOnce()
			}
		}
	})
	return f
}

// flushOnce flushes the file once, unless a flush failed.
func (f *Flusher) flushOnce() {
	if f.fail.Load() {
		return
	}
	if err := f.flush(); err != nil {
		f.fail.Store(true)
		f.failed(err)
	}
}

// Failed reports whether a flush failed.
func (f *Flusher) Failed() bool { return f.fail.Load() }

// Stop ends the flusher and waits for a flush in progress.
func (f *Flusher) Stop() {
	close(f.done)
	f.wg.Wait()
}
