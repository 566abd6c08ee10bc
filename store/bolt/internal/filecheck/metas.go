package filecheck

import (
	"fmt"
	"os"
)

// MetaState describes one of the file's two meta pages.
type MetaState struct {
	// Valid reports whether bbolt accepts the page (magic, version,
	// checksum); Problem says why not.
	Valid   bool
	Problem string
	// TxID is the page's transaction id (meaningful when Valid).
	TxID uint64
}

// Metas reads both meta pages of the file at path and reports which one
// bbolt uses (-1 when none is valid). A sound file has both valid; one
// invalid page means bbolt silently fell back to the other, which may be
// a transaction older. It returns an error only when the file cannot be
// read or has no page size bbolt would find.
func Metas(path string) (metas [2]MetaState, chosen int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return metas, -1, fmt.Errorf("filecheck: %w", err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return metas, -1, fmt.Errorf("filecheck: %w", err)
	}
	pageSize, ok, _, err := findPageSize(f, fi.Size())
	if err != nil {
		return metas, -1, fmt.Errorf("filecheck: %s: read meta: %w", path, err)
	}
	if !ok {
		return metas, -1, corruptf(path, noPage, "no valid meta page")
	}
	var mp metaPair
	mp.pageSize = pageSize
	for i := range mp.m {
		if mp.m[i], err = readMetaAt(f, int64(i)*int64(pageSize), fi.Size(), pageHeaderSize+metaSize); err != nil {
			return metas, -1, fmt.Errorf("filecheck: %s: read meta %d: %w", path, i, err)
		}
		metas[i] = MetaState{Valid: mp.m[i].valid(), Problem: mp.m[i].err, TxID: mp.m[i].txid}
	}
	return metas, chooseMeta(&mp), nil
}
