package bolt

import (
	"runtime/debug"

	bbolt "go.etcd.io/bbolt"
)

// persistFreelist writes bbolt's freelist into the file with one empty
// commit, for the policies that do not write it at every commit
// (SyncOnClose, SyncNoFreelist), so that the next Open reads the freelist
// instead of rebuilding it: without it, bbolt walks every page of the file
// on a read-write open, and Open must check every page before that walk
// (bbolt panics in a goroutine of its own on a bad page), both linear in
// the file's size. A file whose writer died keeps no freelist and is
// opened the slow way. A file nothing was committed to since Open is left
// unchanged. Close calls it with the write gate held, before the file is
// flushed. A failure is logged only: it costs the next Open
// time, nothing else.
func (db *DB) persistFreelist() {
	if !db.bolt.NoFreelistSync || !db.freelistStale.Load() {
		return // written at every commit, or nothing committed since Open
	}
	defer func() {
		if r := recover(); r != nil {
			err := panicError("write freelist", r)
			db.logger.Error(err, "Recovered from a panic writing the cache file's freelist", "stack", string(debug.Stack()))
			db.reportCorrupt(err)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db.bolt.NoFreelistSync = false
	defer func() { db.bolt.NoFreelistSync = true }()
	if err := runUpdate(db.bolt, func(*bbolt.Tx) error { return nil }); err != nil {
		db.logger.Error(classify(err), "Cannot write the cache file's freelist; the next open walks every page to rebuild it")
	}
}

// runUpdate is bbolt's DB.Update (fn in a write transaction, committed
// unless fn fails), except that a panic rolls the transaction back without
// bbolt's physical rollback: for a file without a persisted freelist, that
// rollback walks every page of the file to rebuild the freelist, and on a
// damaged file the walk panics again before bbolt's writer lock is
// released (every later write and Close would wait forever) or reports
// what it found in a goroutine of its own, which panics (a crash). The
// panic is raised again for the caller to recover.
func runUpdate(bdb *bbolt.DB, fn func(*bbolt.Tx) error) error {
	tx, err := bdb.Begin(true)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			_ = tx.Rollback() // releases the writer lock (ErrTxClosed if Commit did)
			panic(r)
		}
	}()
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
