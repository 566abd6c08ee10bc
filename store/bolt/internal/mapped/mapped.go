// Package mapped keeps the resident set of a bolt file's mapping in
// bounds: the size bbolt maps the file at first (InitialSize), and the
// count of the bytes reads and writes touch through the mapping, after
// which its resident pages are dropped (Use).
//
// The pages of the file that reads touch through bbolt's mapping count in
// the process's resident set (RssFile) until the process unmaps them: a
// controller that once listed every object, or read many of them one by
// one, would keep the whole file resident, a file's size of RSS (6.6 GB
// at a million pods) that a memory limit, the OOM killer's score and every
// RSS graph see, for pages the kernel keeps in its page cache anyway. So
// the DB drops its mapping's resident pages (MADV_DONTNEED, which for a
// shared file mapping drops the page table entries and leaves the page
// cache as it was) each time reads and writes have touched about
// ReleaseAfter bytes of it since the last time; the next read of a
// dropped page is a minor fault served from the page cache. Only the
// mapping is released, never the pages' content: a read that faults a
// page back in sees the file as it is.
//
// bbolt remaps the file only within a write transaction (when a commit
// grows it) and unmaps it in Close; both run with the DB's write gate held
// (read-locked by every update, write-locked by Close), so the release
// holds the gate write-locked: the mapping it advises is the one in place
// for the whole call. It only tries the lock, never waits for it: while a
// write runs, the release is left to the next read or write.
package mapped

import "sync/atomic"

// ReleaseAfter is the bytes of the file read or written through the
// mapping after which its resident pages are released: small enough that
// a few thousand objects of a small cluster do not stay mapped after a
// list, large enough that a list of 100k pods releases a few hundred
// times, each a walk of the mapping's page tables of well under a
// millisecond.
const ReleaseAfter = 1 << 20

// Use counts the bytes touched through a mapping since its last release.
// It is safe for concurrent use; the zero value is ready.
type Use struct {
	touched atomic.Int64
}

// Touched counts n bytes read or written through the mapping and reports
// whether ReleaseAfter bytes have been since the last Release. It never
// waits.
func (u *Use) Touched(n int) bool {
	return u.touched.Add(int64(n)) >= ReleaseAfter
}

// Release starts a new count and drops the resident pages of the n bytes
// of the shared file mapping at addr from the process's page tables
// (MADV_DONTNEED; nothing outside Linux). The caller keeps the mapping in
// place for the call.
func (u *Use) Release(addr uintptr, n int64) error {
	u.touched.Store(0)
	return dropResident(addr, n)
}
