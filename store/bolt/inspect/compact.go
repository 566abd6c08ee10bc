package inspect

import (
	"context"
	"fmt"
	"os"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
)

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
	src, err := file(db).Bolt()
	if err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(fileerr.Classify(err))
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return fail(fileerr.Classify(err))
	}
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	dst, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true, NoGrowSync: true, FreelistType: bbolt.FreelistMapType, PageSize: src.Info().PageSize})
	if err != nil {
		return fail(fileerr.Classify(err))
	}
	err = compactInto(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(fileerr.Classify(err))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fail(fileerr.Classify(err))
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
