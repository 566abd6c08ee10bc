//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
	"k8s.io/klog/v2"
)

// tryFlock takes the flock how (syscall.LOCK_SH or LOCK_EX) on f without
// waiting; ok is false when another open file holds a conflicting one.
func tryFlock(f *os.File, how int) (ok bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, fmt.Errorf("flock %s: %w", f.Name(), err)
	}
}

// openLocked opens the bbolt file at path, checked by validateFile under
// its lock, as described at the top of lock.go. For a read-write open it
// also returns the writers' lock file, locked, which the caller closes
// after the bbolt file; nil where the directory cannot hold one. rep is
// set to the report of the check of the file opened.
func openLocked(ctx context.Context, path string, opts Options, logger klog.Logger, out *openResult) (*bbolt.DB, *os.File, error) {
	deadline := time.Now().Add(opts.Timeout)
	if opts.ReadOnly {
		bdb, err := openReader(ctx, path, opts, deadline, out)
		return bdb, nil, err
	}
	writers, err := lockWriters(ctx, path, opts.FileMode, deadline)
	if err != nil {
		return nil, nil, err
	}
	if writers == nil {
		// No lock file: writers exclude each other by bbolt's lock, and
		// wait for readers.
		bdb, err := openChecked(ctx, path, opts, out)
		return bdb, nil, err
	}
	bdb, err := openWriter(ctx, path, opts, deadline, logger, out)
	if err != nil {
		_ = writers.Close()
		return nil, nil, err
	}
	return bdb, writers, nil
}

// lockWriters takes the writers' lock of path (path + LockSuffix), waiting
// until deadline. It returns nil, nil when the lock file does not exist
// and cannot be created (a read-only directory).
func lockWriters(ctx context.Context, path string, mode os.FileMode, deadline time.Time) (*os.File, error) {
	name := path + LockSuffix
	f, err := os.OpenFile(name, os.O_RDONLY|os.O_CREATE, mode)
	if err != nil {
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("writers' lock: %w", classify(err))
		}
		if f, err = os.Open(name); err != nil {
			return nil, nil
		}
	}
	for {
		ok, err := tryFlock(f, syscall.LOCK_EX)
		if err == nil && !ok {
			err = waitLock(ctx, deadline)
		}
		if errors.Is(err, errLockTimeout) {
			_ = f.Close()
			return nil, err // the message of bbolt's own lock timeout
		}
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("writers' lock %s: %w", name, err)
		}
		if ok {
			return f, nil
		}
	}
}

// openWriter opens path read-write for the holder of the writers' lock:
// a file held by readers only is copied over first (copyOver); one held
// exclusively (by a writer that does not take the writers' lock) is
// waited for until deadline.
func openWriter(ctx context.Context, path string, opts Options, deadline time.Time, logger klog.Logger, out *openResult) (*bbolt.DB, error) {
	for {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			// bbolt creates it. Readers never create a file; a writer of an
			// older release may have, and holds it.
			bdb, err := openBoltNow(path, opts)
			if errors.Is(err, bberrors.ErrTimeout) {
				if err = waitLock(ctx, deadline); err == nil {
					continue
				}
			}
			return bdb, err
		}
		if err != nil {
			return nil, classify(err)
		}
		free, err := tryFlock(f, syscall.LOCK_EX)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		if free {
			err = checkLockedFile(ctx, path, opts, &out.report)
			_ = f.Close() // bbolt takes the lock on its own open file
			if err != nil {
				return nil, err
			}
			bdb, err := openBoltNow(path, opts)
			if errors.Is(err, bberrors.ErrTimeout) {
				continue // a reader came in between: copy it over
			}
			return bdb, err
		}
		readers, err := tryFlock(f, syscall.LOCK_SH)
		if err == nil && readers {
			start := time.Now()
			if err = copyOver(f, path); err == nil {
				logger.Info("Read-only processes (snapshot) hold the cache file: wrote a copy to open instead of waiting for them; they keep reading the old file",
					"took", time.Since(start).Round(time.Millisecond))
			}
		}
		_ = f.Close()
		if err == nil && !readers {
			err = waitLock(ctx, deadline)
		}
		if err != nil {
			return nil, err
		}
	}
}

// openReader opens path read-only: it takes the shared lock on the file
// path names (waiting until deadline while a writer holds it), checks it
// and has bbolt open it, and starts again if a writer replaced the file
// meanwhile.
func openReader(ctx context.Context, path string, opts Options, deadline time.Time, out *openResult) (*bbolt.DB, error) {
	for {
		f, err := os.Open(path)
		if err != nil {
			return nil, classify(err)
		}
		bdb, again, err := openReaderOnce(ctx, f, path, opts, out)
		_ = f.Close() // bbolt holds its own shared lock on the same file
		if err == nil && again {
			err = waitLock(ctx, deadline)
		}
		if err != nil || bdb != nil {
			return bdb, err
		}
	}
}

// openReaderOnce is one attempt of openReader on f, path's file when
// opened. again is true when it must be retried: f is locked by a writer,
// or path no longer names it.
func openReaderOnce(ctx context.Context, f *os.File, path string, opts Options, out *openResult) (bdb *bbolt.DB, again bool, err error) {
	ok, err := tryFlock(f, syscall.LOCK_SH)
	if err != nil || !ok {
		return nil, true, err
	}
	if !samePath(f, path) {
		return nil, true, nil
	}
	if err := checkLockedFile(ctx, path, opts, &out.report); err != nil {
		return nil, false, err
	}
	bdb, err = openBoltNow(path, opts)
	switch {
	case errors.Is(err, bberrors.ErrTimeout):
		return nil, true, nil // path names a new file, held by its writer
	case err != nil:
		return nil, false, err
	case !samePath(f, path):
		// bbolt may have opened the file that replaced f's: unchecked.
		_ = bdb.Close()
		return nil, true, nil
	}
	if out.mapped, err = f.Stat(); err != nil {
		_ = bdb.Close()
		return nil, false, classify(err)
	}
	return bdb, false, nil
}
