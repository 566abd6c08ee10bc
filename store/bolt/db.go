package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
	"k8s.io/klog/v2"
)

// DB is an open warmcache file. One file holds many resources (one file per
// informer factory); Resource opens the store of one of them.
//
// A DB is safe for concurrent use. Only one read-write DB may have a file
// open at a time, across processes and within one (Open holds an exclusive
// flock on the file); read-only DBs share it. Close closes every Store
// opened from the DB.
type DB struct {
	bolt   *bbolt.DB
	path   string
	opts   Options
	logger klog.Logger

	// mu guards stores and closed. It is never held during a bbolt
	// transaction.
	mu     sync.Mutex
	stores map[string]*Store // by bucket name, open stores only
	closed bool
}

// Open opens the warmcache file at path, creating it (and nothing else: the
// directory must exist) unless opts.ReadOnly.
//
// Errors: ErrLocked when the lock is not obtained within opts.Timeout;
// ErrCorrupt for a file that is truncated, garbage, or a bbolt file that is
// not a warmcache file; a *VersionError (ErrUnsupportedVersion, ErrCorrupt)
// for a file of a newer format; ErrReadOnly for a file or directory that
// cannot be written (unless opts.ReadOnly); fs.ErrNotExist for a missing
// file opened read-only; ErrInvalidOptions. On error nothing is left open.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = klog.FromContext(ctx)
	}
	logger = logger.WithValues("file", path)
	boot, bootErr := bootID()
	if bootErr != nil && opts.Sync == SyncOnClose && !opts.ReadOnly {
		logger.Info("Cannot tell restarts of the machine apart: flushing every commit (SyncNoFreelist) instead of on close", "err", bootErr)
		opts.Sync = SyncNoFreelist
	}
	newFile := false
	if err := validateFile(ctx, path); err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// bbolt creates it, or reports it for a read-only open.
			newFile = true
		case errors.Is(err, fs.ErrPermission), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("bolt: open %s: %w", path, classify(err))
		case errors.Is(err, ErrCorrupt):
			return nil, fmt.Errorf("bolt: open %s: %w", path, err)
		default:
			return nil, fmt.Errorf("bolt: open %s: %w: %w", path, ErrCorrupt, err)
		}
	}
	bdb, err := openBolt(path, opts)
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, classify(err))
	}
	db := &DB{bolt: bdb, path: path, opts: opts, logger: logger, stores: map[string]*Store{}}
	// Check before writing anything, the state file included: a file that
	// is refused is left as it was found.
	if !newFile {
		if err := trustSyncState(path, boot); err != nil {
			_ = bdb.Close()
			return nil, fmt.Errorf("bolt: open %s: %w", path, err)
		}
	}
	present, err := db.checkFormat()
	if err == nil && !opts.ReadOnly {
		err = db.startSyncState(newFile, boot)
		if err == nil && !present {
			err = db.update("write format marker", writeFormat)
		}
	}
	if err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	return db, nil
}

// openBolt opens the bbolt file, converting a panic (bbolt trusts its file)
// into an error wrapping ErrCorrupt.
func openBolt(path string, opts Options) (bdb *bbolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			bdb, err = nil, panicError("open", r)
		}
	}()
	return bbolt.Open(path, opts.FileMode, &bbolt.Options{
		Timeout:        opts.Timeout,
		ReadOnly:       opts.ReadOnly,
		NoSync:         opts.Sync == UnsafeNoSync || opts.Sync == SyncOnClose,
		NoGrowSync:     opts.Sync == UnsafeNoSync || opts.Sync == SyncOnClose,
		NoFreelistSync: opts.Sync == SyncNoFreelist || opts.Sync == SyncOnClose,
		FreelistType:   bbolt.FreelistMapType,
	})
}

// startSyncState records the policy a read-write DB writes with, before
// its first commit (see syncstate.go): SyncOnClose records "open" with the
// boot id; the flushing policies flush what an earlier SyncOnClose writer
// may have left unflushed and remove the state file, since each of their
// commits is durable. The file must be locked and its state trusted.
func (db *DB) startSyncState(newFile bool, boot string) error {
	switch db.opts.Sync {
	case SyncOnClose:
		err := writeState(db.path, syncState{State: stateOpen, Boot: boot})
		if err == nil {
			return nil
		}
		// The directory does not take the state file (full, read-only):
		// flush every commit instead. No transaction has begun, so the
		// bbolt options may still change.
		db.logger.Error(err, "Cannot record the cache file's state: flushing every commit (SyncNoFreelist) instead of on close")
		db.opts.Sync = SyncNoFreelist
		db.bolt.NoSync, db.bolt.NoGrowSync = false, false
		return nil
	case SyncNoFreelist, SyncFull:
		if !newFile {
			if err := db.bolt.Sync(); err != nil {
				return fmt.Errorf("flush: %w", classify(err))
			}
		}
		return removeSyncState(db.path)
	}
	return nil // UnsafeNoSync promises nothing and records nothing
}

// checkFormat checks the format marker without writing; present is false
// for a new (empty) file, which has none yet.
func (db *DB) checkFormat() (present bool, err error) {
	err = db.view("check format", func(tx *bbolt.Tx) error {
		marker := tx.Bucket(markerBucket)
		if marker == nil {
			var foreign []string
			_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
				foreign = append(foreign, string(name))
				return nil
			})
			if len(foreign) > 0 {
				return fmt.Errorf("%w: not a warmcache file (bbolt buckets %q and no format marker)", ErrCorrupt, foreign)
			}
			return nil
		}
		present = true
		var f fileFormat
		if err := msgpack.Unmarshal(marker.Get(formatKey), &f); err != nil {
			return fmt.Errorf("%w: unreadable format marker: %w", ErrCorrupt, err)
		}
		switch {
		case f.Magic != formatMagic:
			return fmt.Errorf("%w: not a warmcache file (magic %q)", ErrCorrupt, f.Magic)
		case f.Version > formatVersion:
			return &VersionError{What: "file format", Found: f.Version, Supported: formatVersion}
		case f.Version < 1:
			return fmt.Errorf("%w: invalid format version %d", ErrCorrupt, f.Version)
		}
		return nil
	})
	return present, err
}

// writeFormat writes the format marker into a new file.
func writeFormat(tx *bbolt.Tx) error {
	b, err := tx.CreateBucket(markerBucket)
	if err != nil {
		return err
	}
	v, err := msgpack.Marshal(&fileFormat{Magic: formatMagic, Version: formatVersion, Created: time.Now().UnixNano()})
	if err != nil {
		return err
	}
	return b.Put(formatKey, v)
}

// Path returns the file's path as given to Open.
func (db *DB) Path() string { return db.path }

// Close closes every Store opened from db (aborting their open Replaces)
// and then the file. It waits for running transactions to end. Close is
// idempotent; other methods return ErrClosed afterwards.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	stores := make([]*Store, 0, len(db.stores))
	for _, s := range db.stores {
		stores = append(stores, s)
	}
	db.mu.Unlock()
	sort.Slice(stores, func(i, j int) bool { return stores[i].name < stores[j].name })
	var errs []error
	for _, s := range stores {
		errs = append(errs, s.close(false))
	}
	if db.opts.Sync == SyncOnClose && !db.opts.ReadOnly {
		// Flush, then say so: the state file must never claim a flush
		// that failed.
		st := syncState{State: stateClosed}
		if err := db.bolt.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("bolt: close %s: flush: %w", db.path, classify(err)))
			st.State = stateUnflushed
		}
		if err := writeSyncState(db.path, st); err != nil {
			errs = append(errs, fmt.Errorf("bolt: close %s: %w", db.path, err))
		}
	}
	if err := db.bolt.Close(); err != nil {
		errs = append(errs, fmt.Errorf("bolt: close %s: %w", db.path, err))
	}
	return errors.Join(errs...)
}

func (db *DB) isClosed() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.closed
}

// view runs fn in a read transaction. bbolt's errors are classified (see
// classify) and a panic inside bbolt becomes an error wrapping ErrCorrupt.
func (db *DB) view(op string, fn func(*bbolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(op, r)
			db.logger.Error(err, "Recovered from a panic reading the cache file", "op", op, "stack", string(debug.Stack()))
		}
	}()
	return classify(db.bolt.View(fn))
}

// update runs fn in a write transaction and commits it unless fn fails.
// Errors and panics are handled as in view; a failed commit leaves the file
// as it was.
func (db *DB) update(op string, fn func(*bbolt.Tx) error) (err error) {
	if db.opts.ReadOnly {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	defer func() {
		if r := recover(); r != nil {
			err = panicError(op, r)
			db.logger.Error(err, "Recovered from a panic writing the cache file", "op", op, "stack", string(debug.Stack()))
		}
	}()
	return classify(db.bolt.Update(fn))
}

// MoveAside renames the file at path to a new name beside it
// (path.corrupt-<UTC timestamp>) and returns that name, so that a corrupt
// or foreign file is kept for inspection while a new one is created at
// path. Its state file (path.state, see SyncOnClose), if any, moves with
// it. The file must not be open.
func MoveAside(path string) (string, error) {
	dst := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("bolt: move aside %s: %w", path, classify(err))
	}
	err := os.Rename(path+stateSuffix, dst+stateSuffix)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return dst, fmt.Errorf("bolt: move aside %s: %w", path+stateSuffix, classify(err))
	}
	return dst, nil
}

// Remove deletes the file at path and its state file (path.state, see
// SyncOnClose); a missing file is not an error. The file must not be open.
// Deleting only the file is safe too: Open ignores a state file whose file
// is gone.
func Remove(path string) error {
	var errs []error
	for _, p := range []string{path, path + stateSuffix} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("bolt: remove %s: %w", p, classify(err)))
		}
	}
	return errors.Join(errs...)
}
