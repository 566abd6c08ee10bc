package bolt

import (
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// Under SyncOnClose nothing else calls fsync while the file is open, and
// the kernel reports a failed write-back of a page only to the next fsync
// (once per open file). Without one the error would surface at Close, and
// a writer killed before Close would leave a file that the next Open in the
// same boot trusts although pages of it never reached the disk. The flusher
// calls fsync every Options.FlushInterval: a failure is recorded in the
// state file at once ("unflushed": the next Open relists) and remembered,
// so that Close never records the file closed after it.

// flushFile flushes the bbolt file; a variable so that tests can make it
// fail.
var flushFile = func(b *bbolt.DB) error { return b.Sync() }

// flusher flushes a SyncOnClose file periodically until stop.
type flusher struct {
	db     *DB
	done   chan struct{}
	wg     sync.WaitGroup
	failed atomic.Bool // a flush failed: the file is unflushed for good
}

func startFlusher(db *DB, every time.Duration) *flusher {
	f := &flusher{db: db, done: make(chan struct{})}
	f.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-f.done:
				return
			case <-t.C:
				f.flush()
			}
		}
	})
	return f
}

// flush flushes the file once; the first failure is logged and recorded.
func (f *flusher) flush() {
	if f.failed.Load() {
		return
	}
	err := flushFile(f.db.bolt)
	if err == nil {
		return
	}
	f.failed.Store(true)
	f.db.logger.Error(classify(err), "Flushing the cache file failed: it is recorded unflushed and the next start relists")
	if err := writeState(f.db.path, syncState{State: stateUnflushed}, f.db.opts.FileMode); err != nil {
		f.db.logger.Error(err, "Cannot record the cache file unflushed")
	}
}

// stop ends the flusher and waits for a flush in progress.
func (f *flusher) stop() {
	close(f.done)
	f.wg.Wait()
}
