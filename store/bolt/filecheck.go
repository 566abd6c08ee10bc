package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
)

// errFileReplaced ends a background check whose path no longer names the
// file the DB mapped.
var errFileReplaced = errors.New("the path names another file than the one opened")

// FileCheckResult is the state of a DB's check of its file's pages.
type FileCheckResult struct {
	// Done: every page has a verdict, Err (nil for a sound file, else
	// wrapping ErrCorrupt and naming the page). AtOpen: Open checked every
	// page itself; else the check ran in the background for Duration.
	Done, AtOpen bool
	Err          error
	Duration     time.Duration
	// Skipped says why the background check did not walk the file (the
	// path of a read-only DB's file now names a writer's copy).
	Skipped string
	// Corrupt is the first corruption the check or a read found; the next
	// Open returns ErrCorrupt.
	Corrupt error
}

// FileCheck returns the state of the check of the file's pages, without
// waiting for it.
func (db *DB) FileCheck() FileCheckResult {
	v := db.check.Verdict()
	res := FileCheckResult{Done: v.Done, AtOpen: v.AtOpen, Err: v.Err, Duration: v.Duration, Skipped: v.Skipped}
	if p := db.corrupt.Load(); p != nil {
		res.Corrupt = *p
	}
	return res
}

// WaitFileCheck waits for the verdict of the check of the file's pages, or
// for ctx (its error, wrapped). After Close an unfinished check is Done
// with an Err wrapping ErrClosed.
func (db *DB) WaitFileCheck(ctx context.Context) (FileCheckResult, error) {
	select {
	case <-db.check.Done():
		return db.FileCheck(), nil
	case <-ctx.Done():
		return db.FileCheck(), fmt.Errorf("bolt: file check %s: %w", db.path, ctx.Err())
	}
}

// startFileCheck starts the background check of db's file, or records
// that Open checked every page (walked).
//
// The background check is the file check (package filecheck) of every page
// Open did not check (fileCheckAtOpen): it reads the pages with pread,
// never through the mapping, in one read transaction, so that bbolt reuses
// none of the pages it walks. The informer replays a store to handlers
// only after its verdict (Store.WaitFileChecked), so no object of a
// damaged file reaches a handler. Until then, a read that reaches a bad
// page fails safely: bbolt's panics and the faults of the mapping
// (SetPanicOnFault, in the goroutines that read it: view, update and the
// decoders) become errors wrapping ErrCorrupt, and the objects of that
// read are not handed out. Corruption found either way is handled once
// (DB.reportCorrupt).
//
// While the walk runs, its read transaction keeps bbolt from reusing
// freed pages (the file may grow a little more) and from remapping the
// file: a write that must grow the mapping waits for the walk to end.
func (db *DB) startFileCheck(walked bool) {
	if walked {
		db.check = filecheck.Checked()
		db.fcm.Checked(0, false)
		return
	}
	db.check = filecheck.NewBackground()
	db.check.Run(db.checkFile, func(err error, d time.Duration) filecheck.Verdict {
		res := filecheck.Verdict{Err: err, Duration: d}
		switch {
		case errors.Is(err, context.Canceled):
			res.Err = fmt.Errorf("bolt: file check %s: %w (cancelled by Close)", db.path, ErrClosed)
		case errors.Is(err, errFileReplaced):
			// Not this file's fault: a writer copied the file a reader
			// holds over its path (package filelock). The reader's file is no
			// longer written; each read still checks its objects.
			res.Err, res.Skipped = nil, err.Error()
			db.logger.V(1).Info("Not checking the cache file's pages: its path now names a copy a writer made", "reason", err)
			db.fcm.Checked(d, false)
		case err != nil:
			db.reportCorrupt(err)
			db.fcm.Checked(d, true)
		default:
			db.logger.V(2).Info("Checked every page of the cache file", "duration", d)
			db.fcm.Checked(d, false)
		}
		return res
	})
}

// stopFileCheck cancels the background check and waits for it to end.
func (db *DB) stopFileCheck() { db.check.Stop() }

// checkFile walks every page reachable in a read transaction of db.
func (db *DB) checkFile(ctx context.Context) error {
	f, err := os.Open(db.path)
	if err != nil {
		return fmt.Errorf("bolt: file check %s: %w", db.path, err)
	}
	defer func() { _ = f.Close() }()
	err = db.view("file check", func(tx *bbolt.Tx) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if db.mapped != nil && !os.SameFile(fi, db.mapped) {
			return errFileReplaced
		}
		ps := db.bolt.Info().PageSize
		t := filecheck.Tree{PageSize: ps, Root: uint64(tx.Cursor().Bucket().Root()), HWM: uint64(tx.Size()) / uint64(ps)}
		return filecheck.CheckTree(ctx, f, fi.Size(), db.path, t)
	})
	switch {
	case err == nil, errors.Is(err, ErrCorrupt), errors.Is(err, context.Canceled), errors.Is(err, errFileReplaced):
		return err
	case errors.Is(err, filecheck.ErrCorrupt):
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return fmt.Errorf("bolt: file check %s: %w", db.path, err)
}

// WaitFileChecked waits for the verdict of the check of the store's file
// (DB.WaitFileCheck): nil for a sound file, else an error wrapping
// ErrCorrupt or ctx's. The informer waits for it before it replays the
// store to handlers.
func (s *Store) WaitFileChecked(ctx context.Context) error {
	res, err := s.db.WaitFileCheck(ctx)
	switch {
	case err != nil:
		return err
	case res.Corrupt != nil:
		return res.Corrupt
	case res.Err != nil:
		return res.Err
	}
	return nil
}

// openLevels is how deep below the root bucket Open's shallow check walks
// every bucket fully: the resources (level 1), their generations bucket
// (2) and each generation (3), whose items, blobs and index buckets (4)
// have their root page checked. These are the pages Resource reads; the
// data below them is checked by the background walk (startFileCheck).
const openLevels = 4

// fileCheckAtOpen is called by Open before bbolt maps the file, so that a
// truncated or garbage file is rejected with an error instead of crashing
// the process (bbolt trusts its file: a page past the end of a truncated
// file is a SIGBUS, and a garbage page a panic in one of bbolt's
// goroutines, which no recover can catch).
//
// Unless full, it checks in a time independent of the file's size: the
// meta pages, the file's size against the high water mark, the persisted
// freelist and the buckets down to openLevels. A file without a persisted
// freelist (its last writer did not close it) is walked in full anyway:
// bbolt then walks the whole tree itself on a read-write open, panicking
// in a goroutine of its own on what it does not like. The report says
// whether every page in use was checked and whether the file has a
// persisted freelist.
//
// It returns nil for an empty file (bbolt initialises it) and for a file
// that passes; an error wrapping fs.ErrNotExist or fs.ErrPermission is
// handled as such; any other error makes Open fail with ErrCorrupt. It is
// a variable so that tests can replace it.
var fileCheckAtOpen = func(ctx context.Context, path string, full bool) (filecheck.Report, error) {
	return filecheck.CheckReport(ctx, path, filecheck.Options{SkipTreeWalk: !full, BucketLevels: openLevels})
}

// checkLockedFile runs fileCheckAtOpen on path (in full if opts.CheckAtOpen),
// stores its report in rep and classifies its error as Open returns it: nil
// for a file that passes or does not exist (bbolt creates it, or reports it
// for a read-only open).
func checkLockedFile(ctx context.Context, path string, opts Options, rep *filecheck.Report) error {
	r, err := fileCheckAtOpen(ctx, path, opts.CheckAtOpen)
	*rep = r
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, fs.ErrPermission), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return classify(err)
	case errors.Is(err, ErrCorrupt):
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
