package inspect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
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
	err := filecheck.Check(ctx, path, filecheck.Options{})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, filecheck.ErrCorrupt):
		return fmt.Errorf("inspect: check %s: %w: %w", path, bolt.ErrCorrupt, err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("inspect: check %s: %w", path, err)
	}
	return fmt.Errorf("inspect: check %s: %w", path, fileerr.Classify(err))
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
