package bolt

// touched counts n bytes of the file read or written through the mapping
// and releases the mapping's resident pages once mapped.ReleaseAfter bytes
// have been since the last release, or mapped.ReleaseIdle after the first
// of them (package mapped; the release is set at Open, and tried again
// while writes keep it from running). It may be called inside a read transaction,
// and with a store's lock held: it never waits.
func (db *DB) touched(n int) {
	if db.use.Touched(n) && db.releaseMapped() {
		return
	}
	db.use.ReleaseLater() // also when a write kept the release from running
}

// releaseMapped drops the mapping's resident pages if no write
// transaction runs (package mapped), and reports whether it did.
func (db *DB) releaseMapped() bool {
	if !db.writeGate.TryLock() {
		return false
	}
	defer db.writeGate.Unlock()
	if db.closing {
		return false
	}
	tx, err := db.bolt.Begin(false)
	if err != nil {
		return false
	}
	// The pages below the high water mark are mapped (bbolt reads
	// them); the mapping may extend past them, the file too (bbolt grows
	// it ahead of the mapping), so nothing past it is advised.
	size := tx.Size()
	addr := db.bolt.Info().Data
	_ = tx.Rollback()
	if err := db.use.Release(addr, size); err != nil {
		db.logger.V(4).Info("Cannot release the cache file's mapped pages", "err", err)
		return false
	}
	return true
}
