package bolt

import (
	"errors"
	"fmt"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/backup"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Errors of this package. They are wrapped with the operation, the file
// and, where there is one, the key: test them with errors.Is. The errors of
// package store (ErrIndexNotFound, ErrIndexConflict, ErrReplaceInProgress,
// ErrReplaceDone) are returned where the contract names them.
var (
	// ErrLocked: another DB, in this process or another, holds the file
	// read-write for longer than Options.Timeout.
	ErrLocked = fileerr.ErrLocked
	// ErrCorrupt (store.ErrCorrupt): the file is truncated, garbage, not
	// warmcache's, or has a page or record that does not read: move it
	// aside (MoveAside) and rebuild it from the apiserver.
	ErrCorrupt = store.ErrCorrupt
	// ErrUnflushed, an ErrCorrupt: Open found the file's state file (see
	// SyncOnClose) not vouching for it: unflushed and not closed before
	// the machine restarted, a failed flush, or an unreadable state file.
	ErrUnflushed = fileerr.ErrUnflushed
	// ErrChecksum, an ErrCorrupt: stored bytes do not match their
	// checksum. Reads skip such an object, as one that does not decode.
	ErrChecksum = layout.ErrChecksum
	// ErrUnsupportedVersion: the file was written by a newer warmcache
	// (a *VersionError, which also matches ErrCorrupt).
	ErrUnsupportedVersion = errors.New("cache file format version is not supported")
	// ErrDiskFull wraps ENOSPC or EDQUOT from a failed write; the
	// transaction is rolled back.
	ErrDiskFull = fileerr.ErrDiskFull
	// ErrReadOnly: a write to a read-only DB, or to a file or file system
	// that cannot be written (EROFS, EACCES, EPERM).
	ErrReadOnly = fileerr.ErrReadOnly
	// ErrClosed (store.ErrClosed): the DB or Store is closed.
	ErrClosed = store.ErrClosed
	// ErrInvalidOptions: options that cannot work (no codec, an invalid
	// identity, a nil index function).
	ErrInvalidOptions = errors.New("invalid options")
	// ErrResourceInUse: a Store of the identity is open on the DB, or the
	// resource is being dropped.
	ErrResourceInUse = errors.New("resource is already open")
	// ErrResourceNotFound: the file does not hold the resource (and a
	// read-only DB cannot create it).
	ErrResourceNotFound = fileerr.ErrResourceNotFound
	// ErrUnauthenticated and ErrForbidden are what an Authorizer of
	// DB.BackupHandler returns, wrapped, for a request without a valid
	// credential (401) and for a caller that may not read the file (403).
	ErrUnauthenticated = backup.ErrUnauthenticated
	ErrForbidden       = backup.ErrForbidden
	// ErrIndexFunc (an index function failed), ErrTransactionType and
	// ErrEncode (the codec's Encode failed) fail a write, not applied.
	ErrIndexFunc       = store.ErrIndexFunc
	ErrTransactionType = store.ErrTransactionType
	ErrEncode          = errors.New("cannot encode object")
)

// VersionError reports a file or resource written in a format this package
// does not know. It matches ErrUnsupportedVersion and ErrCorrupt.
type VersionError struct {
	What             string // the versioned thing ("file format")
	Found, Supported int    // recorded, and the newest this package reads
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s version %d is newer than supported version %d", e.What, e.Found, e.Supported)
}

// Is reports whether target is ErrUnsupportedVersion or ErrCorrupt.
func (e *VersionError) Is(target error) bool {
	return target == ErrUnsupportedVersion || target == ErrCorrupt
}

// classify is fileerr.Classify: it wraps err with the sentinel of this
// package that describes it, if any.
func classify(err error) error { return fileerr.Classify(err) }

// panicError is fileerr.PanicError.
func panicError(op string, r any) error { return fileerr.PanicError(op, r) }
