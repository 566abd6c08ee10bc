package bolt

// The pages of the file that reads touch through bbolt's mapping count in
// the process's resident set (RssFile) until the process unmaps them: a
// controller that once listed every object, or read many of them one by
// one, would keep the whole file resident, a file's size of RSS (6.6 GB
// at a million pods) that a memory limit, the OOM killer's score and every
// RSS graph see, for pages the kernel keeps in its page cache anyway. So
// the DB drops its mapping's resident pages (MADV_DONTNEED, which for a
// shared file mapping drops the page table entries and leaves the page
// cache as it was) each time reads and writes have touched about
// releaseAfter bytes of it since the last time; the next read of a
// dropped page is a minor fault served from the page cache. Only the
// mapping is released, never the pages' content: a read that faults a
// page back in sees the file as it is.
//
// bbolt remaps the file only within a write transaction (when a commit
// grows it) and unmaps it in Close; both run with the write gate held
// (read-locked by every update, write-locked by Close), so the release
// holds the gate write-locked: the mapping it advises is the one in place
// for the whole call. It only tries the lock, never waits for it: while a
// write runs, the release is left to the next read or write.

import "sync/atomic"

// releaseAfter is the bytes of the file read or written through the
// mapping after which its resident pages are released: small enough that
// a few thousand objects of a small cluster do not stay mapped after a
// list, large enough that a list of 100k pods releases a few hundred
// times, each a walk of the mapping's page tables of well under a
// millisecond.
const releaseAfter = 1 << 20

// mappedUse counts the bytes touched through a DB's mapping since its last
// release.
type mappedUse struct {
	touched atomic.Int64
}

// touched counts n bytes of the file read or written through the mapping
// and releases the mapping's resident pages once releaseAfter bytes have
// been since the last release. It may be called inside a read
// transaction, and with a store's lock held: it never waits.
func (db *DB) touched(n int) {
	if db.use.touched.Add(int64(n)) < releaseAfter {
		return
	}
	db.releaseMapped()
}

// releaseMapped drops the mapping's resident pages if no write
// transaction runs (see above), and reports whether it did.
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
	db.use.touched.Store(0)
	if err := dropResident(addr, size); err != nil {
		db.logger.V(4).Info("Cannot release the cache file's mapped pages", "err", err)
		return false
	}
	return true
}
