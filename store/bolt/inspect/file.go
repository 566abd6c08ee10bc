package inspect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
)

// CheckFile checks the bbolt structure of the file at path with ordinary
// reads, never a memory mapping: the meta pages, the file size against the
// high water mark, and every page reachable from the root (types, element
// tables, key order, no cycles, the freelist, no page neither reachable nor
// free). It takes time proportional to the size of the file (about 1-3 ms
// per MB). It returns nil for a sound file, an error wrapping
// bolt.ErrCorrupt that names the page and the problem, an error wrapping
// fs.ErrNotExist, or an I/O error.
//
// It does not lock the file: open a read-only bolt.DB on path first (its
// shared lock keeps writers away) and call CheckFile while it is open. An
// empty file passes (bbolt initialises it); bolt.Open of such a file
// read-only yields a DB without resources.
func CheckFile(ctx context.Context, path string) error {
	err := filecheck.Validate(ctx, path, filecheck.Options{})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, filecheck.ErrCorrupt):
		return fmt.Errorf("inspect: check %s: %w: %w", path, bolt.ErrCorrupt, err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("inspect: check %s: %w", path, err)
	}
	return fmt.Errorf("inspect: check %s: %w", path, hooks.Classify(err))
}

// compactTxMaxSize bounds the bytes CompactTo writes per transaction, so
// that its memory stays bounded on large files.
const compactTxMaxSize = 64 << 20

// CompactTo writes a compacted copy of db's file to a new file at path
// (mode 0600) and returns the new file's size. The copy holds the same
// buckets, keys and values, densely packed, without free pages; it is read
// from one read transaction, so writes to db may go on meanwhile. The new
// file is flushed to stable storage before CompactTo returns. db itself is
// only read. The copy has the page size of db's file (bolt.Options.PageSize
// applies only to files Open creates; the copy keeps the one its source was
// created with).
//
// path must not exist (an error wrapping fs.ErrExist otherwise); on error
// the partly written file is removed. ctx is checked before the copy
// starts; the copy itself is not interruptible. A page of db that bbolt
// cannot read returns an error wrapping bolt.ErrCorrupt; a closed db
// bolt.ErrClosed.
func CompactTo(ctx context.Context, db *bolt.DB, path string) (size int64, err error) {
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("inspect: compact %s to %s: %w", db.Path(), path, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	src, err := hooks.Bolt(db)
	if err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(hooks.Classify(err))
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return fail(hooks.Classify(err))
	}
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	dst, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true, NoGrowSync: true, FreelistType: bbolt.FreelistMapType, PageSize: src.Info().PageSize})
	if err != nil {
		return fail(hooks.Classify(err))
	}
	err = compactInto(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(hooks.Classify(err))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fail(hooks.Classify(err))
	}
	return fi.Size(), nil
}

// compactInto runs bbolt.Compact, converting a panic on a page bbolt cannot
// read into an error wrapping bolt.ErrCorrupt.
func compactInto(dst, src *bbolt.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compact: %w: bbolt panicked: %v", bolt.ErrCorrupt, r)
		}
	}()
	return bbolt.Compact(dst, src, compactTxMaxSize)
}

// MetaPage describes one of the two meta pages of a bbolt file, which
// bbolt writes in turn: each names the root of one committed transaction.
type MetaPage struct {
	// Valid reports whether bbolt accepts the page; Problem says why
	// not (a bad checksum, a torn write).
	Valid   bool
	Problem string
	// TxID is the transaction the page records (when Valid).
	TxID uint64
}

// MetaPages reports the two meta pages of the file at path and which one
// bbolt reads the file through (-1: none). bbolt opens a file one of whose
// meta pages is damaged through the other without a word, losing the last
// transaction when the damaged page was the newer one; a tool reports it.
// It does not lock the file (see CheckFile). Errors wrap bolt.ErrCorrupt
// (no valid meta page), fs.ErrNotExist, or an I/O error.
func MetaPages(path string) (pages [2]MetaPage, chosen int, err error) {
	ms, chosen, err := filecheck.Metas(path)
	if err != nil {
		if errors.Is(err, filecheck.ErrCorrupt) {
			return pages, -1, fmt.Errorf("inspect: meta pages of %s: %w: %w", path, bolt.ErrCorrupt, err)
		}
		return pages, -1, fmt.Errorf("inspect: meta pages of %s: %w", path, err)
	}
	for i, m := range ms {
		pages[i] = MetaPage{Valid: m.Valid, Problem: m.Problem, TxID: m.TxID}
	}
	return pages, chosen, nil
}
