// Package mapped keeps the resident set of a bolt file's mapping in
// bounds: the size bbolt maps the file at first (InitialSize), and the
// count of the bytes reads and writes touch through the mapping, after
// which its resident pages are dropped, and a second after the first of
// them in any case (Use).
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
// ReleaseAfter bytes of it since the last time, and ReleaseIdle after the
// first of them in any case; the next read of a
// dropped page is a minor fault served from the page cache. Only the
// mapping is released, never the pages' content: a read that faults a
// page back in sees the file as it is.
//
// bbolt remaps the file only within a write transaction (when a commit
// grows it) and unmaps it in Close; both run with the DB's write gate held
// (read-locked by every update, write-locked by Close), so the release
// holds the gate write-locked: the mapping it advises is the one in place
// for the whole call. It only tries the lock, never waits for it: while a
// write runs, the release is left to ReleaseLater's next try, a second
// later.
package mapped

import (
	"sync/atomic"
	"time"
)

// ReleaseAfter is the bytes of the file read or written through the
// mapping after which its resident pages are released: small enough that
// a few thousand objects of a small cluster do not stay mapped after a
// list, large enough that a list of 100k pods releases a few hundred
// times, each a walk of the mapping's page tables of well under a
// millisecond.
const ReleaseAfter = 1 << 20

// ReleaseIdle is how long after the first bytes touched since the last
// idle release the pages are released anyway (Use.ReleaseLater): the few
// hundred KiB that a small resource's list, or a few reads, touch never
// reach ReleaseAfter, and would stay resident as long as the process
// runs.
const ReleaseIdle = time.Second

// Use counts the bytes touched through a mapping since its last release.
// It is safe for concurrent use once SetRelease was called; the zero value
// is ready, and ReleaseLater needs SetRelease.
type Use struct {
	touched atomic.Int64
	armed   atomic.Bool // a ReleaseLater timer is pending
	stopped atomic.Bool

	// release and afterFunc are set before the Use is shared.
	release   func() bool
	afterFunc func(time.Duration, func()) *time.Timer // time.AfterFunc, or a test's
}

// Touched counts n bytes read or written through the mapping and reports
// whether ReleaseAfter bytes have been since the last Release. It never
// waits.
func (u *Use) Touched(n int) bool {
	return u.touched.Add(int64(n)) >= ReleaseAfter
}

// SetRelease sets what ReleaseLater calls: release drops the mapping's
// resident pages (with Release) and reports whether it could; if it could
// not (a write was running), it is tried again ReleaseIdle later. Call it
// before the Use is shared.
func (u *Use) SetRelease(release func() bool) { u.release = release }

// ReleaseLater arranges for the release set by SetRelease to run
// ReleaseIdle from now, on a goroutine of its own, if bytes are still
// counted then, unless it is already arranged or Stop was called. It
// never waits. Each arrangement is a timer of its own, never stopped or
// reset by another goroutine: a timer made in a testing/synctest bubble
// must not be touched from outside it. One armed in a bubble whose clock
// stopped (its main goroutine ended) never fires, and leaves ReleaseLater
// armed for good: the idle release of a DB shared across bubbles is off
// once one of them ends (tests only; ReleaseAfter's release still runs).
func (u *Use) ReleaseLater() {
	if u.armed.Load() || u.stopped.Load() || !u.armed.CompareAndSwap(false, true) {
		return
	}
	after := u.afterFunc
	if after == nil {
		after = time.AfterFunc
	}
	after(ReleaseIdle, u.fire)
}

func (u *Use) fire() {
	u.armed.Store(false)
	if u.touched.Load() == 0 || u.stopped.Load() {
		return
	}
	if u.release != nil && !u.release() {
		u.ReleaseLater()
	}
}

// Pending reports whether a ReleaseLater call is pending.
func (u *Use) Pending() bool { return u.armed.Load() }

// Counted returns the bytes counted since the last Release.
func (u *Use) Counted() int64 { return u.touched.Load() }

// Stop refuses later ReleaseLater calls; one pending does nothing when
// its time comes. A call already running may still run its release, which
// must check that the mapping is still in place.
func (u *Use) Stop() { u.stopped.Store(true) }

// Release starts a new count and drops the resident pages of the n bytes
// of the shared file mapping at addr from the process's page tables
// (MADV_DONTNEED; nothing outside Linux). The caller keeps the mapping in
// place for the call.
func (u *Use) Release(addr uintptr, n int64) error {
	u.touched.Store(0)
	return dropResident(addr, n)
}
