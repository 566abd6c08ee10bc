package bolt

import (
	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// The state file beside a file written with SyncOnClose is package
// syncstate's; these are variables so that tests can simulate a restart
// of the machine (bootID) and failures (writeState, flushFile).
var (
	bootID     = syncstate.BootID
	writeState = syncstate.Write
	flushFile  = func(b *bbolt.DB) error { return b.Sync() }
)

// startFlusher starts the background flush of a SyncOnClose file (see
// syncstate.Flusher): a failure is logged and recorded in the state file.
func (db *DB) startFlusher() {
	db.flusher = syncstate.StartFlusher(db.opts.FlushInterval, func() error { return flushFile(db.bolt) }, func(err error) {
		db.logger.Error(classify(err), "Flushing the cache file failed: it is recorded unflushed and the next start relists")
		if err := writeState(db.path, syncstate.State{State: syncstate.Unflushed}, db.opts.FileMode); err != nil {
			db.logger.Error(err, "Cannot record the cache file unflushed")
		}
	})
}
