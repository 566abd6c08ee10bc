//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filelock

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

	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
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

// Open opens the bbolt file at path, checked by cfg.Check under its lock,
// as the package documentation describes. The caller classifies its
// errors (fileerr.Classify): a lock not obtained in time is bbolt's
// ErrTimeout.
func Open(ctx context.Context, path string, cfg Config) (Opened, error) {
	deadline := time.Now().Add(cfg.Timeout)
	if cfg.ReadOnly {
		bdb, mapped, err := openReader(ctx, path, cfg, deadline)
		return Opened{DB: bdb, Mapped: mapped}, err
	}
	writers, err := lockWriters(ctx, path, cfg.FileMode, deadline)
	if err != nil {
		return Opened{}, err
	}
	if writers == nil {
		// No lock file: writers exclude each other by bbolt's lock, and
		// wait for readers.
		bdb, err := openChecked(ctx, path, cfg)
		return Opened{DB: bdb}, err
	}
	bdb, err := openWriter(ctx, path, cfg, deadline)
	if err != nil {
		_ = writers.Close()
		return Opened{}, err
	}
	return Opened{DB: bdb, Writers: writers}, nil
}

// lockWriters takes the writers' lock of path (path + Suffix), waiting
// until deadline. It returns nil, nil when the lock file does not exist
// and cannot be created (a read-only directory).
func lockWriters(ctx context.Context, path string, mode os.FileMode, deadline time.Time) (*os.File, error) {
	name := path + Suffix
	f, err := os.OpenFile(name, os.O_RDONLY|os.O_CREATE, mode)
	if err != nil {
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("writers' lock: %w", fileerr.Classify(err))
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
func openWriter(ctx context.Context, path string, cfg Config, deadline time.Time) (*bbolt.DB, error) {
	for {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			// bbolt creates it. Readers never create a file; a writer of an
			// older release may have, and holds it.
			bdb, err := openNow(path, cfg)
			if errors.Is(err, bberrors.ErrTimeout) {
				if err = waitLock(ctx, deadline); err == nil {
					continue
				}
			}
			return bdb, err
		}
		if err != nil {
			return nil, fileerr.Classify(err)
		}
		free, err := tryFlock(f, syscall.LOCK_EX)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		if free {
			err = cfg.Check(ctx, path)
			_ = f.Close() // bbolt takes the lock on its own open file
			if err != nil {
				return nil, err
			}
			bdb, err := openNow(path, cfg)
			if errors.Is(err, bberrors.ErrTimeout) {
				continue // a reader came in between: copy it over
			}
			return bdb, err
		}
		readers, err := tryFlock(f, syscall.LOCK_SH)
		if err == nil && readers {
			start := time.Now()
			if err = copyOver(f, path); err == nil {
				cfg.Logger.Info("Read-only processes (snapshot) hold the cache file: wrote a copy to open instead of waiting for them; they keep reading the old file",
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
func openReader(ctx context.Context, path string, cfg Config, deadline time.Time) (*bbolt.DB, os.FileInfo, error) {
	for {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, fileerr.Classify(err)
		}
		bdb, mapped, again, err := openReaderOnce(ctx, f, path, cfg)
		_ = f.Close() // bbolt holds its own shared lock on the same file
		if err == nil && again {
			err = waitLock(ctx, deadline)
		}
		if err != nil || bdb != nil {
			return bdb, mapped, err
		}
	}
}

// openReaderOnce is one attempt of openReader on f, path's file when
// opened. again is true when it must be retried: f is locked by a writer,
// or path no longer names it. mapped is f's file.
func openReaderOnce(ctx context.Context, f *os.File, path string, cfg Config) (bdb *bbolt.DB, mapped os.FileInfo, again bool, err error) {
	ok, err := tryFlock(f, syscall.LOCK_SH)
	if err != nil || !ok {
		return nil, nil, true, err
	}
	if !samePath(f, path) {
		return nil, nil, true, nil
	}
	if err := cfg.Check(ctx, path); err != nil {
		return nil, nil, false, err
	}
	bdb, err = openNow(path, cfg)
	switch {
	case errors.Is(err, bberrors.ErrTimeout):
		return nil, nil, true, nil // path names a new file, held by its writer
	case err != nil:
		return nil, nil, false, err
	case !samePath(f, path):
		// bbolt may have opened the file that replaced f's: unchecked.
		_ = bdb.Close()
		return nil, nil, true, nil
	}
	if mapped, err = f.Stat(); err != nil {
		_ = bdb.Close()
		return nil, nil, false, fileerr.Classify(err)
	}
	return bdb, mapped, false, nil
}
