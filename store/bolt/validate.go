package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
)

// validateFile is called by Open before bbolt maps the file, so that a
// truncated or garbage file is rejected with an error instead of crashing
// the process (bbolt trusts its file: a page past the end of a truncated
// file is a SIGBUS no recover can catch). It returns nil for a missing or
// empty file (bbolt creates or initialises it) and for a file that passes;
// an error wrapping fs.ErrNotExist or fs.ErrPermission is handled as such;
// any other error makes Open fail with ErrCorrupt.
//
// The default is the minimal check below; the internal filecheck package
// provides the thorough one.
var validateFile = func(ctx context.Context, path string) error {
	return filecheck.Validate(ctx, path, filecheck.Options{})
}

// bbolt's on-disk meta page, as of bbolt v1.4 (format version 2): a 16-byte
// page header, then magic, version, page size, flags (uint32 each), the root
// bucket (16 bytes), freelist, pgid and txid (uint64 each) and an FNV-64a
// checksum of everything before it.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltPageHeader   = 16
	boltMetaSize     = 64
	boltMetaChecksum = 56
)

// minimalValidate checks the meta pages (magic, version, checksum, page
// size) and that the file is at least as long as the high water mark of
// the meta bbolt would use, which is what keeps bbolt from faulting on a
// truncated file.
func minimalValidate(_ context.Context, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, path)
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	m0, err0 := readBoltMeta(f, 0)
	pageSize := int64(os.Getpagesize())
	if err0 == nil {
		pageSize = int64(m0.pageSize)
	}
	m1, err1 := readBoltMeta(f, pageSize)
	var m boltMeta
	switch {
	case err0 == nil && err1 == nil:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case err0 == nil:
		m = m0
	case err1 == nil:
		m = m1
	default:
		return fmt.Errorf("%w: %s: no valid bbolt meta page (%v; %v)", ErrCorrupt, path, err0, err1)
	}
	ps := int64(m.pageSize)
	if ps < 512 || ps > 1<<16 || ps&(ps-1) != 0 {
		return fmt.Errorf("%w: %s: page size %d", ErrCorrupt, path, ps)
	}
	if size%ps != 0 || size < 2*ps {
		return fmt.Errorf("%w: %s: size %d is not a multiple of %d pages, at least two", ErrCorrupt, path, size, ps)
	}
	if m.pgid < 2 || m.pgid > uint64(size/ps) {
		return fmt.Errorf("%w: %s: high water mark of %d pages does not fit %d bytes (truncated?)", ErrCorrupt, path, m.pgid, size)
	}
	return nil
}

type boltMeta struct {
	pageSize uint32
	pgid     uint64
	txid     uint64
}

func readBoltMeta(r io.ReaderAt, off int64) (boltMeta, error) {
	buf := make([]byte, boltPageHeader+boltMetaSize)
	if _, err := r.ReadAt(buf, off); err != nil {
		return boltMeta{}, fmt.Errorf("meta at %d: %w", off, err)
	}
	b := buf[boltPageHeader:]
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != boltMagic {
		return boltMeta{}, fmt.Errorf("meta at %d: bad magic", off)
	}
	if le.Uint32(b[4:]) != boltVersion {
		return boltMeta{}, fmt.Errorf("meta at %d: version %d", off, le.Uint32(b[4:]))
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:boltMetaChecksum])
	if h.Sum64() != le.Uint64(b[boltMetaChecksum:]) {
		return boltMeta{}, fmt.Errorf("meta at %d: checksum mismatch", off)
	}
	return boltMeta{pageSize: le.Uint32(b[8:]), pgid: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}, nil
}
