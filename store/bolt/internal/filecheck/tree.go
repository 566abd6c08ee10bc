package filecheck

import (
	"context"
	"io"
)

// Tree names one consistent state of an open bbolt file: what a read
// transaction sees (its root bucket's root page and high water mark).
type Tree struct {
	// PageSize is the file's page size.
	PageSize int
	// Root is the root bucket's root page (bbolt's Tx.Cursor().Bucket().Root()).
	Root uint64
	// HWM is the high water mark: pages [0, HWM) are in use (Tx.Size() /
	// PageSize).
	HWM uint64
}

// CheckTree walks every page reachable from t.Root with the checks of
// Check's tree walk (page types and headers, element tables, keys and
// values inside their pages, key order, nested and inline buckets, no page
// reached twice, nothing at or past the high water mark), reading the
// pages from r, whose first size bytes are the file. It does not check the
// meta pages or the freelist, and not that every page is reachable or
// free: it is meant for a file that bbolt has open, whose pages may be
// reused by later transactions, so the caller must keep a read transaction
// on t open for the walk's duration (bbolt then reuses none of its pages).
//
// It returns nil for a sound tree, an error wrapping ErrCorrupt (with a
// *CorruptionError) naming the page and the problem, an I/O error wrapped
// with path, or ctx's error, wrapped, if ctx ends during the walk.
func CheckTree(ctx context.Context, r io.ReaderAt, size int64, path string, t Tree) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ps := uint64(t.PageSize)
	switch {
	case !isPowerOfTwo(ps) || ps < MinPageSize || ps > MaxPageSize:
		return corruptf(path, noPage, "page size %d is not a power of two in [%d, %d]", ps, MinPageSize, MaxPageSize)
	case t.HWM < 2 || t.HWM > uint64(size)/ps:
		return corruptf(path, noPage, "high water mark %d pages (%d bytes) does not fit a file of %d bytes (truncated?)", t.HWM, t.HWM*ps, size)
	case t.Root >= t.HWM:
		return corruptf(path, noPage, "root bucket page %d beyond high water mark %d", t.Root, t.HWM)
	}
	w := &walker{
		ctx:   ctx,
		pr:    &pageReader{r: r, path: path, size: size, pageSize: ps, hwm: t.HWM},
		reach: newBitset(t.HWM),
		deep:  true,
	}
	w.reach.set(0)
	w.reach.set(1)
	return w.walkBucket(t.Root, pos{rootBucket: true})
}
