package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	bberrors "go.etcd.io/bbolt/errors"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Errors of this package. They are wrapped with the operation, the file and,
// where there is one, the key; test with errors.Is. The errors of package
// store (ErrIndexNotFound, ErrIndexConflict, ErrReplaceInProgress,
// ErrReplaceDone) are returned where the contract names them.
var (
	// ErrLocked is returned by Open when another process (or another DB in
	// this process) holds the file's lock for longer than Options.Timeout.
	ErrLocked = errors.New("cache file is locked by another process")

	// ErrCorrupt is returned when the file is not a readable warmcache
	// file: truncated, garbage, a bbolt file of someone else, or a page
	// bbolt cannot read. The disk is a cache: the caller moves the file
	// aside (see MoveAside) and rebuilds it from the apiserver.
	//
	// It is store.ErrCorrupt, the contract's corruption error.
	ErrCorrupt = store.ErrCorrupt

	// ErrUnflushed is returned by Open for a file whose state file (see
	// SyncOnClose) does not vouch for it: written without flushing and
	// not closed before the machine restarted (or the boot id that tells
	// cannot be read), a flush that failed, or a state file that is
	// unreadable or records an unknown state. Such a file may be torn. It
	// matches ErrCorrupt: the caller moves the file aside (MoveAside,
	// which moves its state file too) and rebuilds it.
	ErrUnflushed = fmt.Errorf("%w: not flushed before the machine restarted", ErrCorrupt)

	// ErrChecksum is wrapped by the errors of stored bytes that do not
	// match their checksum: an object's envelope (its payload,
	// resourceVersion or UID) or item entry, an index entry, a resource's
	// meta or live pointer. It matches ErrCorrupt, and is handled like
	// an object that does not decode: reads skip the object (or stop, for
	// the streaming ones), log it, count it in
	// warmcache_store_corrupt_objects_total, mark the resource incomplete
	// and call ResourceOptions.OnCorruption; a damaged meta or live
	// pointer discards the resource on open (State().Discarded says why).
	ErrChecksum = layout.ErrChecksum

	// ErrUnsupportedVersion is returned by Open for a file written by a
	// newer warmcache, whose format this one does not know. The error is a
	// *VersionError, which also matches ErrCorrupt: such a file is
	// unreadable for this binary and handled like a corrupt one.
	ErrUnsupportedVersion = errors.New("cache file format version is not supported")

	// ErrDiskFull wraps syscall.ENOSPC (or EDQUOT) from a failed write.
	// The transaction is rolled back: the previous content and
	// resourceVersion are intact, in the file and in the store.
	ErrDiskFull = errors.New("disk full")

	// ErrReadOnly is returned for a write to a DB opened with
	// Options.ReadOnly, and for a file or file system that cannot be
	// written (EROFS, EACCES, EPERM). The underlying error, if any, is
	// wrapped too.
	ErrReadOnly = errors.New("cache file is read-only")

	// ErrClosed is store.ErrClosed: methods of a closed DB or Store
	// return it.
	ErrClosed = store.ErrClosed

	// ErrInvalidOptions is returned by Open and Resource for options that
	// cannot work (missing codec, invalid identity, nil index function).
	ErrInvalidOptions = errors.New("invalid options")

	// ErrResourceInUse is returned by Resource when a Store for the same
	// identity is open on this DB and not yet closed, or being dropped
	// (DropResource), and by DropResource when such a Store is open.
	ErrResourceInUse = errors.New("resource is already open")

	// ErrResourceNotFound is returned by inspect.OpenRecorded for an identity the
	// file does not hold.
	ErrResourceNotFound = errors.New("resource not found in cache file")

	// ErrUnauthenticated is what an Authorizer of DB.BackupHandler
	// returns, wrapped, for a request without a valid credential; the
	// handler answers 401.
	ErrUnauthenticated = errors.New("not authenticated")

	// ErrForbidden is what an Authorizer of DB.BackupHandler returns,
	// wrapped, for an authenticated caller that may not read the file; the
	// handler answers 403.
	ErrForbidden = errors.New("not authorized")

	// ErrIndexFunc is store.ErrIndexFunc: an index function failed or
	// panicked. The write is not applied.
	ErrIndexFunc = store.ErrIndexFunc

	// ErrTransactionType is store.ErrTransactionType.
	ErrTransactionType = store.ErrTransactionType

	// ErrEncode wraps an error of the codec's Encode (for example an
	// object that is not a runtime.Object). The write is not applied.
	ErrEncode = errors.New("cannot encode object")

	// ErrNoIndexFunc is returned by Index on a Store opened with
	// inspect.OpenRecorded: the file records index names and entries, not the
	// functions that computed them.
	ErrNoIndexFunc = errors.New("index function not available")
)

// VersionError reports a file or resource written in a format this package
// does not know. It matches ErrUnsupportedVersion and ErrCorrupt.
type VersionError struct {
	// What names the versioned thing ("file format").
	What string
	// Found is the version recorded in the file; Supported the newest
	// this package reads.
	Found, Supported int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s version %d is newer than supported version %d", e.What, e.Found, e.Supported)
}

// Is reports whether target is ErrUnsupportedVersion or ErrCorrupt.
func (e *VersionError) Is(target error) bool {
	return target == ErrUnsupportedVersion || target == ErrCorrupt
}

// classify wraps err with the sentinel of this package that describes it,
// if any: ENOSPC/EDQUOT → ErrDiskFull, EROFS/EACCES/EPERM and bbolt's
// read-only errors → ErrReadOnly, bbolt's corruption errors → ErrCorrupt,
// bbolt's closed-database errors → ErrClosed. Other errors are returned
// unchanged. The original error stays in the chain.
func classify(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, ErrDiskFull), errors.Is(err, ErrReadOnly), errors.Is(err, ErrCorrupt),
		errors.Is(err, ErrClosed), errors.Is(err, ErrLocked):
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
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	case errors.Is(err, bberrors.ErrDatabaseNotOpen), errors.Is(err, bberrors.ErrTxClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, bberrors.ErrTimeout):
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return err
}

// panicError converts a value recovered from a panic inside bbolt into an
// error wrapping ErrCorrupt: bbolt panics on pages it cannot interpret.
func panicError(op string, r any) error {
	if err, ok := r.(error); ok {
		return fmt.Errorf("%s: %w: bbolt panicked: %w", op, ErrCorrupt, err)
	}
	return fmt.Errorf("%s: %w: bbolt panicked: %v", op, ErrCorrupt, r)
}
