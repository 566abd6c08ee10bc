// Package filelock opens a warmcache file under its locks, so that
// inspection never blocks a controller.
//
// bbolt locks the file it opens with flock: exclusive for a read-write
// open, shared for a read-only one, held until Close. A reader (the
// snapshot CLI) holding its shared lock for a long command used to keep a
// controller's Open waiting until its timeout, then failing with
// ErrLocked. A reader cannot simply skip the lock: a writer reuses the
// pages it frees, so a reader of a file being written can read pages that
// have been overwritten since.
//
// Instead, writers exclude each other with a lock of their own, an
// exclusive flock on the lock file beside the cache file (path + Suffix,
// created by the first writer and never removed by Open or Close), and a
// writer hands a file held by readers over to them (on platforms with
// flock; elsewhere bbolt's own lock is all there is, and a writer waits for
// readers as before):
//
//  1. Take the writers' lock, waiting at most the timeout: a second writer
//     gets ErrLocked, as before.
//  2. Try the exclusive lock on the cache file without waiting. Free: bbolt
//     opens it. Held shared: only readers hold it (a writer of an older
//     release, which does not take the writers' lock, would hold it
//     exclusively; it is waited for until the timeout), so, holding a
//     shared lock itself so that no writer can change the file meanwhile,
//     the writer copies the file beside it (a reflink where the filesystem
//     has them, else an in-kernel copy), flushes the copy, renames it over
//     path and flushes the directory, then opens the copy. The readers keep
//     reading the old file, which no process writes any more; its space is
//     freed when the last of them closes it.
//
// Readers lock the file they open before checking it (Config.Check), and
// check that path still names that file once bbolt has it; if a writer
// replaced it meanwhile, they start again on the new one.
//
// The cost of a conflict falls on the writer: one copy of the file
// (figures in docs/deployment.md) and, while the readers run, the disk
// space of a second copy. The other way round, a reader copying the file
// before every read, would make every inspection pay for the copy and the
// space, and would still need the writer's lock during the copy.
//
// The lock file guards the path, not the file's content: package bolt's
// MoveAside leaves it in place, Remove removes it with the file.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/fsync"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
)

// Suffix names the writers' lock file of a cache file: path + Suffix.
const Suffix = ".lock"

// CopySuffix names the temporary copy a writer makes of a file held by
// readers, before renaming it over the cache file.
const CopySuffix = ".copy"

// lockPoll is the interval between two attempts to take a lock.
const lockPoll = 10 * time.Millisecond

// errLockTimeout is returned when a lock is not obtained in time; the
// caller's fileerr.Classify turns it into ErrLocked with the message
// bbolt's own timeout gives.
var errLockTimeout = bberrors.ErrTimeout

// Config configures Open.
type Config struct {
	// ReadOnly opens the file shared, for reading.
	ReadOnly bool
	// Timeout bounds the wait for the locks.
	Timeout time.Duration
	// FileMode is the mode of a lock file Open creates.
	FileMode os.FileMode
	// Logger receives the line telling that readers held the file.
	Logger klog.Logger
	// Check checks the file at path, locked, before bbolt maps it: nil
	// for a file that passes or does not exist (bbolt creates it, or
	// reports it for a read-only open).
	Check func(ctx context.Context, path string) error
	// Bolt has bbolt open path, waiting at most timeout for bbolt's own
	// lock (an error wrapping bbolt's ErrTimeout when it expires).
	Bolt func(path string, timeout time.Duration) (*bbolt.DB, error)
}

// Opened is what Open opened.
type Opened struct {
	DB *bbolt.DB
	// Writers is the writers' lock file of a read-write open, locked
	// until the caller closes it, after DB; nil for a read-only open or
	// where the directory cannot hold one.
	Writers *os.File
	// Mapped is the file bbolt mapped, for a read-only open (a writer's
	// is stated by the caller under its lock): a writer may have replaced
	// the file at path since (copyOver), which the reader keeps reading.
	// Nil where not known (other platforms).
	Mapped os.FileInfo
}

// waitLock waits lockPoll, or until ctx ends. It returns errLockTimeout
// once deadline has passed.
func waitLock(ctx context.Context, deadline time.Time) error {
	if !time.Now().Before(deadline) {
		return errLockTimeout
	}
	t := time.NewTimer(min(lockPoll, time.Until(deadline)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// openChecked checks path (Config.Check) and has bbolt open it, waiting
// for bbolt's own lock until the timeout: where that lock is the only one
// (no flock, or no writers' lock file), so a writer waits for readers.
func openChecked(ctx context.Context, path string, cfg Config) (*bbolt.DB, error) {
	if err := cfg.Check(ctx, path); err != nil {
		return nil, err
	}
	return cfg.Bolt(path, cfg.Timeout)
}

// openNow is Config.Bolt trying bbolt's lock once: the caller holds or
// has just checked the lock, and waits itself.
func openNow(path string, cfg Config) (*bbolt.DB, error) {
	return cfg.Bolt(path, time.Nanosecond)
}

// samePath reports whether path still names the file f has open.
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// copyOver replaces the file at path by a copy of src, the same file open
// and locked shared by the caller so that nobody writes it meanwhile: the
// copy is written to path + CopySuffix, flushed, renamed over path, and the
// directory flushed, so that path names the whole copy or the old file,
// even across a crash of the machine.
func copyOver(src *os.File, path string) error {
	fi, err := src.Stat()
	if err != nil {
		return fmt.Errorf("copy %s: %w", path, fileerr.Classify(err))
	}
	tmp := path + CopySuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copy %s: remove a stale copy: %w", path, fileerr.Classify(err))
	}
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return fmt.Errorf("copy %s: %w", path, fileerr.Classify(err))
	}
	if err := copyContent(dst, src, fi.Size()); err != nil {
		_ = dst.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("copy %s to %s: %w", path, tmp, fileerr.Classify(err))
	}
	serr := dst.Sync()
	if err := errors.Join(serr, dst.Close()); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("copy %s: flush %s: %w", path, tmp, fileerr.Classify(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("copy %s: %w", path, fileerr.Classify(err))
	}
	if err := fsync.Dir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("copy %s: flush the directory: %w", path, fileerr.Classify(err))
	}
	return nil
}

// copyContent copies the size bytes of src into the empty dst: a reflink
// (cloneFile) where the filesystem shares blocks between files, else a
// copy, which io.Copy does in the kernel (copy_file_range) where it can.
func copyContent(dst, src *os.File, size int64) error {
	if cloneFile(dst, src) == nil {
		return nil
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	n, err := io.Copy(dst, io.LimitReader(src, size))
	if err == nil && n != size {
		err = fmt.Errorf("copied %d of %d bytes", n, size)
	}
	return err
}
