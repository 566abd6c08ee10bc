package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// Open checks the file in a time independent of its size (validate.go):
// the meta pages, the size against the high water mark (a page past the
// end of the file would be a SIGBUS), the freelist and the buckets a
// Resource reads. Every other page is checked by a walk in the background
// (startFileCheck), which reads the pages with pread, never through the
// mapping, in one read transaction, so that bbolt reuses none of the pages
// it walks. The informer replays a store to handlers only after its
// verdict (Store.WaitFileChecked), so no object of a damaged file reaches
// a handler. Until then, a read that reaches a bad page fails safely:
// bbolt's panics and the faults of the mapping (SetPanicOnFault, in the
// goroutines that read it: view, update and the decoders) become errors
// wrapping ErrCorrupt, and the objects of that read are not handed out.
//
// Corruption found either way is handled once (reportCorrupt): logged with
// the reason, recorded in the state file beside the file (so that the next
// Open returns ErrCorrupt and the caller moves the file aside), every open
// resource marked incomplete and its OnCorruption called (the informer
// relists), and reported by FileCheck and the metrics.
//
// The walk costs about what the walk at Open used to: it reads every page
// in use once. While it runs, its read transaction keeps bbolt from
// reusing freed pages (the file may grow a little more) and from
// remapping the file: a write that must grow the mapping waits for the
// walk to end.

// errFileReplaced ends a background check whose path no longer names the
// file the DB mapped.
var errFileReplaced = errors.New("the path names another file than the one opened")

// FileCheckResult is the state of a DB's file check.
type FileCheckResult struct {
	// Done is true once the check of every page has a verdict.
	Done bool
	// AtOpen is true when Open checked every page itself (Options.
	// CheckAtOpen, a file whose freelist was not persisted, an empty
	// file), false when the check ran in the background.
	AtOpen bool
	// Err is the check's verdict when Done: nil for a sound file, an
	// error wrapping ErrCorrupt naming the page and the problem
	// otherwise.
	Err error
	// Skipped, when not empty, says why the background check did not walk
	// the file: a read-only DB whose path a writer replaced with a copy
	// (the reader's file is no longer written; each read still checks its
	// objects' checksums). Err is nil then.
	Skipped string
	// Duration is how long the background check took (0 for AtOpen).
	Duration time.Duration
	// Corrupt is the first corruption found while the file was open, by
	// the check or by a read (a bbolt panic, a fault of the mapping); nil
	// if none. The next Open of the file returns ErrCorrupt.
	Corrupt error
}

// fileCheck is a DB's background check.
type fileCheck struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the verdict is in res

	mu  sync.Mutex // guards res
	res FileCheckResult
}

// FileCheck returns the state of the check of the file's pages, without
// waiting for it; see WaitFileCheck.
func (db *DB) FileCheck() FileCheckResult {
	db.check.mu.Lock()
	res := db.check.res
	db.check.mu.Unlock()
	if p := db.corrupt.Load(); p != nil {
		res.Corrupt = *p
	}
	return res
}

// WaitFileCheck waits for the verdict of the check of the file's pages and
// returns it, or ctx's error, wrapped, if ctx ends first. After Close, an
// unfinished check is cancelled: its result is Done with an Err wrapping
// ErrClosed.
func (db *DB) WaitFileCheck(ctx context.Context) (FileCheckResult, error) {
	select {
	case <-db.check.done:
		return db.FileCheck(), nil
	case <-ctx.Done():
		return db.FileCheck(), fmt.Errorf("bolt: file check %s: %w", db.path, ctx.Err())
	}
}

// startFileCheck starts the background check of db's file, or records
// that Open checked every page (walked).
func (db *DB) startFileCheck(walked bool) {
	ctx, cancel := context.WithCancel(context.Background())
	db.check = &fileCheck{cancel: cancel, done: make(chan struct{})}
	if walked {
		db.check.res = FileCheckResult{Done: true, AtOpen: true}
		close(db.check.done)
		db.fcm.Checked(0, false)
		return
	}
	go func() {
		start := time.Now()
		err := db.checkFile(ctx)
		res := FileCheckResult{Done: true, Err: err, Duration: time.Since(start)}
		switch {
		case errors.Is(err, context.Canceled):
			res.Err = fmt.Errorf("bolt: file check %s: %w (cancelled by Close)", db.path, ErrClosed)
		case errors.Is(err, errFileReplaced):
			// Not this file's fault: a writer copied the file a reader
			// holds over its path (lock.go). The reader's file is no
			// longer written; each read still checks its objects.
			res.Err, res.Skipped = nil, err.Error()
			db.logger.V(1).Info("Not checking the cache file's pages: its path now names a copy a writer made", "reason", err)
			db.fcm.Checked(res.Duration, false)
		case err != nil:
			db.reportCorrupt(err)
			db.fcm.Checked(res.Duration, true)
		default:
			db.logger.V(2).Info("Checked every page of the cache file", "duration", res.Duration)
			db.fcm.Checked(res.Duration, false)
		}
		db.check.mu.Lock()
		db.check.res = res
		db.check.mu.Unlock()
		close(db.check.done)
	}()
}

// stopFileCheck cancels the background check and waits for it to end.
func (db *DB) stopFileCheck() {
	db.check.cancel()
	<-db.check.done
}

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

// reportCorrupt handles corruption found in the open file (see the top of
// this file); only the first report does anything. It does not block and
// takes no store lock: it may be called from inside a transaction or a
// decoding goroutine.
func (db *DB) reportCorrupt(err error) {
	if !db.corrupt.CompareAndSwap(nil, &err) {
		return
	}
	db.logger.Error(err, "The cache file is corrupt: its resources are marked incomplete and relisted, and the next open moves it aside")
	db.fcm.Corrupt()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return // Close records it
	}
	stores := make([]*Store, 0, len(db.stores))
	for _, s := range db.stores {
		stores = append(stores, s)
	}
	db.bg.Go(func() {
		if !db.opts.ReadOnly {
			if werr := db.recordCorrupt(err); werr != nil {
				db.logger.Error(werr, "Cannot record the cache file as corrupt in its state file")
			}
		}
		for _, s := range stores {
			s.fileCorrupted(err)
		}
	})
}

// recordCorrupt records in the state file that the file is corrupt, unless
// path no longer names the file Open locked.
func (db *DB) recordCorrupt(cause error) error {
	if !db.pathNamesFile() {
		return nil
	}
	return writeState(db.path, syncstate.State{State: syncstate.Corrupt, Reason: cause.Error()}, db.opts.FileMode)
}

// fileCorrupted marks s incomplete and calls its OnCorruption after the
// file was found corrupt, the first time only: DB.Resource calls it for a
// corruption found before the store was registered, and the report of a
// corruption found meanwhile may already have called it.
func (s *Store) fileCorrupted(err error) {
	if !s.fileCorrupt.CompareAndSwap(false, true) {
		return
	}
	s.markIncomplete(fmt.Sprintf("the cache file is corrupt: %v", err))
	if s.onCorrupt != nil {
		s.onCorrupt(s.errorf("file check", err))
	}
}

// WaitFileChecked waits for the verdict of the check of the store's file
// (DB.WaitFileCheck) and returns nil for a sound file, an error wrapping
// ErrCorrupt when the check or a read found the file damaged, or ctx's
// error, wrapped. The informer waits for it before it replays the store to
// handlers, so that no object of a damaged file reaches one.
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
