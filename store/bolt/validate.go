package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/filelock"
)

// LockSuffix names the writers' lock file of a cache file: path + LockSuffix.
const LockSuffix = filelock.Suffix

// openLevels is how deep below the root bucket Open's shallow check walks
// every bucket fully: the resources (level 1), their generations bucket
// (2) and each generation (3), whose items, blobs and index buckets (4)
// have their root page checked. These are the pages Resource reads; the
// data below them is checked by the background walk (filecheck.go).
const openLevels = 4

// validateFile is called by Open before bbolt maps the file, so that a
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
var validateFile = func(ctx context.Context, path string, full bool) (filecheck.Report, error) {
	return filecheck.ValidateReport(ctx, path, filecheck.Options{SkipTreeWalk: !full, BucketLevels: openLevels})
}

// checkLockedFile runs validateFile on path (in full if opts.CheckAtOpen),
// stores its report in rep and classifies its error as Open returns it: nil
// for a file that passes or does not exist (bbolt creates it, or reports it
// for a read-only open).
func checkLockedFile(ctx context.Context, path string, opts Options, rep *filecheck.Report) error {
	r, err := validateFile(ctx, path, opts.CheckAtOpen)
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
