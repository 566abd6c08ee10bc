// Package fileerr holds the errors of a warmcache file that the packages of
// store/bolt share: the sentinels package bolt exports (and documents), and
// Classify, which wraps an error of the operating system or of bbolt with
// the sentinel that describes it.
package fileerr

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	bberrors "go.etcd.io/bbolt/errors"

	"github.com/warmcache/warmcache/store"
)

// The sentinels, exported and documented by package bolt (and inspect)
// under the same names.
var (
	ErrLocked   = errors.New("cache file is locked by another open DB, in this process or another")
	ErrDiskFull = errors.New("disk full")
	ErrReadOnly = errors.New("cache file is read-only")
	// ErrResourceNotFound is a resource the file does not hold.
	ErrResourceNotFound = errors.New("resource not found in cache file")
	// ErrNoIndexFunc is returned by Index on a store opened as recorded
	// (package inspect exports it).
	ErrNoIndexFunc = errors.New("index function not available")
	// ErrUnflushed matches store.ErrCorrupt.
	ErrUnflushed = fmt.Errorf("%w: not flushed before the machine restarted", store.ErrCorrupt)
)

// Classify wraps err with the sentinel that describes it, if any:
// ENOSPC/EDQUOT → ErrDiskFull, EROFS/EACCES/EPERM and bbolt's read-only
// errors → ErrReadOnly, bbolt's corruption errors → store.ErrCorrupt,
// bbolt's closed-database errors → store.ErrClosed, bbolt's lock timeout →
// ErrLocked. Other errors are returned unchanged. The original error stays
// in the chain.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, ErrDiskFull), errors.Is(err, ErrReadOnly), errors.Is(err, store.ErrCorrupt),
		errors.Is(err, store.ErrClosed), errors.Is(err, ErrLocked):
		return err
	// bbolt formats some errors with %s (file growth, mmap), which drops
	// the errno from the chain: match their text too.
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT),
		strings.Contains(err.Error(), syscall.ENOSPC.Error()), strings.Contains(err.Error(), syscall.EDQUOT.Error()):
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission), strings.Contains(err.Error(), syscall.EROFS.Error()),
		errors.Is(err, bberrors.ErrDatabaseReadOnly), errors.Is(err, bberrors.ErrTxNotWritable):
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	case errors.Is(err, bberrors.ErrInvalid), errors.Is(err, bberrors.ErrVersionMismatch),
		errors.Is(err, bberrors.ErrChecksum), errors.Is(err, bberrors.ErrInvalidMapping),
		errors.Is(err, bberrors.ErrIncompatibleValue):
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	case errors.Is(err, bberrors.ErrDatabaseNotOpen), errors.Is(err, bberrors.ErrTxClosed):
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	case errors.Is(err, bberrors.ErrTimeout):
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return err
}

// PanicError converts a value recovered from a panic inside bbolt into an
// error wrapping store.ErrCorrupt: bbolt panics on pages it cannot
// interpret.
func PanicError(op string, r any) error {
	if err, ok := r.(error); ok {
		return fmt.Errorf("%s: %w: bbolt panicked: %w", op, store.ErrCorrupt, err)
	}
	return fmt.Errorf("%s: %w: bbolt panicked: %v", op, store.ErrCorrupt, r)
}

// IsFault reports whether r, recovered from a panic, is a memory fault
// that debug.SetPanicOnFault turned into a panic (a SIGBUS past the end of
// a truncated mapping, a SIGSEGV).
func IsFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}
