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
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/filelock"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/mapped"
	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// DB is an open warmcache file, which holds many resources (one file per
// informer factory); Resource opens the store of one of them. A DB is safe
// for concurrent use. Close closes every Store opened from it.
type DB struct {
	bolt     *bbolt.DB
	path     string
	pageSize int // the file's, from its meta page
	opts     Options
	logger   klog.Logger

	// mu guards stores, dropping and closed. It is never held during a
	// bbolt transaction.
	mu       sync.Mutex
	stores   map[string]*Store // by bucket name, open stores only
	dropping map[string]bool   // bucket names DropResource is deleting
	closed   bool

	// writeGate is read-locked by every write transaction (update) and
	// write-locked by Close, which sets closing under it: once Close has
	// flushed the file and recorded it closed, no commit can follow.
	// releaseMapped tries to write-lock it, never waits for it.
	writeGate sync.RWMutex
	closing   bool
	// use counts the bytes touched through the mapping since its
	// resident pages were last released (package mapped).
	use mapped.Use
	// writers is the writers' lock file (path.lock), locked
	// until Close; nil for a read-only DB or where there is none
	// (package filelock).
	writers *os.File
	// file identifies the file Open locked, so that Close records the
	// state of this file only, not of one created at path since
	// (pathNamesFile); nil for a read-only DB.
	file os.FileInfo
	// mapped identifies the file bbolt mapped (file, or a reader's), the
	// one the background check walks; nil where not known (other
	// platforms' readers).
	mapped os.FileInfo
	// flusher flushes a SyncOnClose file periodically; nil otherwise.
	flusher *syncstate.Flusher
	// hot is the hot tier shared by the stores without their own; nil if
	// disabled.
	hot *hot.Tier
	// metrics is Options.Metrics, or noMetrics.
	metrics Metrics
	// hotEpoch counts the write transactions that may have changed
	// stored objects without updating the hot tier (all but a store's
	// batches, see updateKeepHot): a hot entry put before the last one
	// is checked against the file again.
	hotEpoch hot.Epoch

	// check is the background check of the file's pages (filecheck.go);
	// fcm its metrics. corrupt is the first corruption found in the
	// open file, nil while none was; bg runs what reportCorrupt starts
	// (added to under mu while not closed, waited for by Close).
	check   *filecheck.Background
	fcm     FileMetrics
	corrupt atomic.Pointer[error]
	bg      sync.WaitGroup
	// freelistStale is true when the file's meta has no persisted
	// freelist: at Open, or after a commit (see persistFreelist).
	freelistStale atomic.Bool
}

// Open opens the warmcache file at path, creating it unless opts.ReadOnly.
// A read-write Open does not wait for read-only DBs: it replaces the file at
// path by a copy, and they keep reading theirs. The file is checked before
// bbolt maps it; the pages Open does not check are checked in the
// background (DB.FileCheck). Errors: ErrLocked; ErrCorrupt (a damaged or
// foreign file), ErrUnflushed, a *VersionError (a newer format);
// ErrReadOnly; fs.ErrNotExist (read-only); ErrInvalidOptions (a
// directory too). A refused file is left as it was found, and nothing is
// left open.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	if err := regularOrMissing(path); err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	metrics := opts.Metrics
	if metrics == nil {
		metrics = noMetrics{}
	}
	fcm := metrics.File(path)
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = klog.FromContext(ctx)
	}
	logger = logger.WithValues("file", path)
	boot, bootErr := bootID()
	// The file is checked (fileCheckAtOpen) under its lock, before bbolt maps
	// it; a writer takes the writers' lock first (package filelock).
	var report filecheck.Report
	opened, err := filelock.Open(ctx, path, filelock.Config{
		ReadOnly: opts.ReadOnly, Timeout: opts.Timeout, FileMode: opts.FileMode, Logger: logger,
		Check: func(ctx context.Context, path string) error { return checkLockedFile(ctx, path, opts, &report) },
		Bolt: func(path string, timeout time.Duration) (*bbolt.DB, error) {
			o := opts
			o.Timeout = timeout
			return openBolt(path, o)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, classify(err))
	}
	bdb := opened.DB
	db := &DB{bolt: bdb, pageSize: bdb.Info().PageSize, writers: opened.Writers, path: path, opts: opts, logger: logger, stores: map[string]*Store{},
		hot: hot.New(*opts.HotBytes), metrics: metrics, fcm: fcm}
	db.freelistStale.Store(!report.Persisted)
	db.mapped = opened.Mapped
	db.use.SetRelease(db.releaseMapped)
	// Check before writing anything, the state file included: a file that
	// is refused is left as it was found. Whether the file is new is
	// decided here, under the lock: another process may have created it
	// since fileCheckAtOpen looked.
	empty, present, err := db.checkFormat()
	if err == nil && !empty && !opts.UnsafeIgnoreState {
		err = syncstate.Trust(path, boot)
	}
	if err == nil && !opts.ReadOnly {
		db.file, err = os.Stat(path)
		db.mapped = db.file
		if err == nil {
			err = db.startSyncState(boot, bootErr)
		}
		if err == nil && !present {
			err = db.update("write format marker", writeFormat)
		}
	}
	if err != nil {
		db.mu.Lock()
		db.closed = true // nothing more for reportCorrupt to start
		db.mu.Unlock()
		db.bg.Wait()
		_ = bdb.Close()
		db.unlockWriters()
		return nil, fmt.Errorf("bolt: open %s: %w", path, classify(err))
	}
	if db.opts.Sync == SyncOnClose && !opts.ReadOnly && opts.FlushInterval > 0 {
		db.startFlusher()
	}
	db.startFileCheck(report.Walked)
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
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a file truncated since fileCheckAtOpen
	return bbolt.Open(path, opts.FileMode, &bbolt.Options{
		Timeout:    opts.Timeout,
		ReadOnly:   opts.ReadOnly,
		PageSize:   opts.PageSize, // bbolt uses it only to create the file
		NoSync:     opts.Sync == UnsafeNoSync || opts.Sync == SyncOnClose,
		NoGrowSync: opts.Sync == UnsafeNoSync || opts.Sync == SyncOnClose,
		// Always at first: otherwise bbolt commits a freelist inside Open,
		// before the file's state was checked. startSyncState turns it
		// off for the policies that write the freelist.
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
		// See mapped.InitialSize.
		InitialMmapSize: mapped.InitialSize,
	})
}

// startSyncState records the policy a read-write DB writes with, before
// its first commit (package syncstate): SyncOnClose and UnsafeNoSync record
// "open" with the boot id (only SyncOnClose ever records "closed"); the
// flushing policies, if a state file is there, flush what an earlier
// unflushed writer may have left and remove it, since each of their
// commits is durable. The
// file must be locked and its state trusted; no transaction has begun, so
// bbolt's options may still change. SyncOnClose falls back to
// SyncNoFreelist when it cannot keep its promise: without a boot id
// (bootErr) a dead process and a restarted machine look alike, and without
// a state file nothing records either.
func (db *DB) startSyncState(boot string, bootErr error) error {
	mode := db.opts.FileMode
	switch db.opts.Sync {
	case SyncOnClose:
		err := bootErr
		if err == nil {
			if err = writeState(db.path, syncstate.State{State: syncstate.Open, Boot: boot}, mode); err == nil {
				return nil
			}
		}
		db.logger.Error(err, "Cannot record the cache file's state with the machine's boot id: flushing every commit (SyncNoFreelist) instead of on close")
		db.opts.Sync = SyncNoFreelist
		db.bolt.NoSync, db.bolt.NoGrowSync = false, false
		if err := db.bolt.Sync(); err != nil {
			return fmt.Errorf("flush: %w", classify(err))
		}
		_ = syncstate.Remove(db.path) // best effort: a state left behind only costs a relist
		return nil
	case UnsafeNoSync:
		db.bolt.NoFreelistSync = false
		if err := writeState(db.path, syncstate.State{State: syncstate.Open, Boot: boot}, mode); err != nil {
			db.logger.Error(err, "Cannot record the cache file's state; with UnsafeNoSync a restart of the machine may leave it torn unnoticed")
		}
		return nil
	}
	db.bolt.NoFreelistSync = db.opts.Sync == SyncNoFreelist
	if _, err := os.Lstat(layout.StatePath(db.path)); errors.Is(err, fs.ErrNotExist) {
		return nil // the last writer flushed every commit: nothing to take over
	}
	if err := db.bolt.Sync(); err != nil {
		return fmt.Errorf("flush: %w", classify(err))
	}
	return syncstate.Remove(db.path)
}

// checkFormat checks the format marker without writing. empty is true for
// a file without any bucket (new, or created and never written), present
// when the marker is there.
func (db *DB) checkFormat() (empty, present bool, err error) {
	err = db.view("check format", func(tx *bbolt.Tx) error {
		c := tx.Cursor()
		first, _ := c.First()
		empty = first == nil
		marker := tx.Bucket(layout.MarkerBucket)
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
		var f layout.FileFormat
		if err := msgpack.Unmarshal(marker.Get(layout.FormatKey), &f); err != nil {
			return fmt.Errorf("%w: unreadable format marker: %w", ErrCorrupt, err)
		}
		switch {
		case f.Magic != layout.Magic:
			return fmt.Errorf("%w: not a warmcache file (magic %q)", ErrCorrupt, f.Magic)
		case f.Version > layout.FormatVersion:
			return &VersionError{What: "file format", Found: f.Version, Supported: layout.FormatVersion}
		case f.Version < 1:
			return fmt.Errorf("%w: invalid format version %d", ErrCorrupt, f.Version)
		}
		return nil
	})
	return empty, present, err
}

// writeFormat writes the format marker into a new file.
func writeFormat(tx *bbolt.Tx) error {
	b, err := tx.CreateBucket(layout.MarkerBucket)
	if err != nil {
		return err
	}
	v, err := msgpack.Marshal(&layout.FileFormat{Magic: layout.Magic, Version: layout.FormatVersion, Created: time.Now().UnixNano()})
	if err != nil {
		return err
	}
	return b.Put(layout.FormatKey, v)
}

// Path returns the file's path as given to Open.
func (db *DB) Path() string { return db.path }

// PageSize returns the file's bbolt page size: the one it was created with,
// whatever Options.PageSize says at later opens. It answers after Close too.
func (db *DB) PageSize() int { return db.pageSize }

// Close closes every Store opened from db (aborting their open Replaces),
// stops the background file check, waits for running transactions, flushes
// the file as its sync policy says and closes it. It is idempotent; other
// methods return ErrClosed afterwards.
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
	if db.flusher != nil {
		db.flusher.Stop()
	}
	db.stopFileCheck()
	db.bg.Wait()
	// No commit may follow the flush: wait for the running ones (a
	// Resource being opened writes outside any store's lock) and refuse
	// later ones.
	db.writeGate.Lock()
	defer db.writeGate.Unlock()
	db.closing = true
	db.use.Stop() // a release armed before this does nothing
	if !db.opts.ReadOnly && db.corrupt.Load() == nil {
		db.persistFreelist()
	}
	switch {
	case db.opts.Sync == SyncOnClose && !db.opts.ReadOnly:
		errs = append(errs, db.recordClosed())
	case db.corrupt.Load() != nil && !db.opts.ReadOnly:
		errs = append(errs, db.recordCorrupt(*db.corrupt.Load()))
	}
	if err := db.bolt.Close(); err != nil {
		errs = append(errs, fmt.Errorf("bolt: close %s: %w", db.path, err))
	}
	db.unlockWriters()
	return errors.Join(errs...)
}

// pathNamesFile reports whether db.path still names the file Open locked
// read-write (false for a read-only DB): the state file beside path
// describes that file only while it does.
func (db *DB) pathNamesFile() bool {
	fi, err := os.Stat(db.path)
	return err == nil && db.file != nil && os.SameFile(fi, db.file)
}

// unlockWriters releases the writers' lock, after the bbolt file is
// closed.
func (db *DB) unlockWriters() {
	if db.writers != nil {
		_ = db.writers.Close()
	}
}

// recordClosed flushes the file and records it closed, or unflushed if the
// flush failed: the state file never claims a flush that did not happen.
// It records nothing if path no longer names the file Open locked (moved
// aside by someone else): that state file describes another file now.
func (db *DB) recordClosed() error {
	if !db.pathNamesFile() {
		db.logger.Info("The cache file was moved or replaced while open; leaving the state file at its path alone")
		return nil
	}
	var errs []error
	st := syncstate.State{State: syncstate.Closed}
	if p := db.corrupt.Load(); p != nil {
		// Found corrupt while open: the next Open refuses it.
		st = syncstate.State{State: syncstate.Corrupt, Reason: (*p).Error()}
	}
	if err := flushFile(db.bolt); err != nil {
		errs = append(errs, fmt.Errorf("bolt: close %s: flush: %w", db.path, classify(err)))
		st.State = syncstate.Unflushed
	}
	if db.flusher != nil && db.flusher.Failed() && st.State != syncstate.Corrupt {
		// The kernel reports a lost write once: a flush that succeeds
		// after a failed one does not vouch for the file.
		errs = append(errs, fmt.Errorf("bolt: close %s: an earlier flush failed", db.path))
		st.State = syncstate.Unflushed
	}
	if err := writeState(db.path, st, db.opts.FileMode); err != nil {
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
// classify); a panic inside bbolt or a fault reading the mapping becomes an
// error wrapping ErrCorrupt and is reported (reportCorrupt).
func (db *DB) view(op string, fn func(*bbolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(op, r)
			db.logger.Error(err, "Recovered from a panic reading the cache file", "op", op, "stack", string(debug.Stack()))
			db.reportCorrupt(err)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see startFileCheck
	return classify(db.bolt.View(fn))
}

// update runs fn in a write transaction and commits it unless fn fails.
// Errors and panics are handled as in view; a failed commit leaves the file
// as it was.
func (db *DB) update(op string, fn func(*bbolt.Tx) error) (err error) {
	// Before the transaction, so that no bulk read it overlaps finds a
	// part of the hot tier whole (hot.Part.Complete), and after the
	// commit, whatever its outcome.
	db.hotEpoch.Begin()
	defer db.hotEpoch.End()
	return db.updateKeepHot(op, fn)
}

// updateKeepHot is update for the writes that keep the hot tier up to
// date themselves (a store's batches, see hot.Part.Committed) or change no
// object (bookmarks).
func (db *DB) updateKeepHot(op string, fn func(*bbolt.Tx) error) (err error) {
	if db.opts.ReadOnly {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	db.writeGate.RLock()
	defer db.writeGate.RUnlock()
	if db.closing {
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	defer func() {
		if r := recover(); r != nil {
			err = panicError(op, r)
			db.logger.Error(err, "Recovered from a panic writing the cache file", "op", op, "stack", string(debug.Stack()))
			db.reportCorrupt(err)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see startFileCheck
	defer db.freelistStale.Store(true)                       // whether or not it committed
	return classify(runUpdate(db.bolt, fn))
}

// MoveAside renames the file at path, and its state file, to a new name
// beside it (path.corrupt-<UTC time>) and returns that name, so that a
// corrupt file is kept for inspection while a new one is created at path.
// The file must not be open; a directory is not moved (ErrInvalidOptions).
func MoveAside(path string) (string, error) {
	if err := regularOrMissing(path); err != nil {
		return "", fmt.Errorf("bolt: move aside %s: %w; left as it is", path, err)
	}
	dst := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("bolt: move aside %s: %w", path, classify(err))
	}
	err := os.Rename(layout.StatePath(path), layout.StatePath(dst))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return dst, fmt.Errorf("bolt: move aside %s: %w", layout.StatePath(path), classify(err))
	}
	return dst, nil
}

// Remove deletes the file at path and the files beside it (its state file,
// its writers' lock file path.lock, a copy an interrupted Open left); a
// missing file is not an error. The file must not be open.
func Remove(path string) error {
	var errs []error
	for _, p := range []string{path, layout.StatePath(path), path + filelock.CopySuffix, path + filelock.Suffix} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("bolt: remove %s: %w", p, classify(err)))
		}
	}
	return errors.Join(errs...)
}

// regularOrMissing returns ErrInvalidOptions, naming what it is, if path
// exists and is not a regular file (after symbolic links): a directory
// given for the cache file must not be reported corrupt, and so moved
// aside by its caller.
func regularOrMissing(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil // a missing file is created; other errors come from the open
	}
	what := "a directory"
	if !fi.IsDir() {
		what = "not a regular file (" + fi.Mode().Type().String() + ")"
	}
	return fmt.Errorf("%w: %s is %s, not a cache file", ErrInvalidOptions, path, what)
}
