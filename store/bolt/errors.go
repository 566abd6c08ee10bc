package bolt

import (
	"errors"
	"fmt"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Errors of this package. They are wrapped with the operation, the file and,
// where there is one, the key; test with errors.Is. The errors of package
// store (ErrIndexNotFound, ErrIndexConflict, ErrReplaceInProgress,
// ErrReplaceDone) are returned where the contract names them.
var (
	// ErrLocked is returned by Open when another process (or another DB in
	// this process) holds the file's lock for longer than Options.Timeout.
	ErrLocked = fileerr.ErrLocked

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
	ErrUnflushed = fileerr.ErrUnflushed

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
	ErrDiskFull = fileerr.ErrDiskFull

	// ErrReadOnly is returned for a write to a DB opened with
	// Options.ReadOnly, and for a file or file system that cannot be
	// written (EROFS, EACCES, EPERM). The underlying error, if any, is
	// wrapped too.
	ErrReadOnly = fileerr.ErrReadOnly

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
	ErrResourceNotFound = fileerr.ErrResourceNotFound

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

// classify is fileerr.Classify: it wraps err with the sentinel of this
// package that describes it, if any.
func classify(err error) error { return fileerr.Classify(err) }

// panicError is fileerr.PanicError.
func panicError(op string, r any) error { return fileerr.PanicError(op, r) }
