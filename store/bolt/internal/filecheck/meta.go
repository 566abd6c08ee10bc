package filecheck

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
)

// On-disk layout of bbolt v1.4 (go.etcd.io/bbolt/internal/common). bbolt
// writes its structures in the host's byte order, so they are read with
// binary.NativeEndian: a file moved across byte orders fails the checksum.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2

	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	pgidSize         = 8

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10

	bucketLeafFlag = 0x01

	// metaSize is the encoded meta: magic, version, pageSize, flags u32;
	// root bucket (root, sequence u64); freelist, pgid, txid, checksum u64.
	metaSize        = 64
	metaChecksumOff = 56 // the checksum covers the bytes before it

	noFreelist = ^uint64(0) // bbolt's PgidNoFreelist

	// bbolt reads the first 4 KiB to find meta 0 and probes for meta 1 at
	// 1 KiB << i (db.go getPageSizeFromFirstMeta / FromSecondMeta).
	firstMetaRead = 0x1000
	probeMin      = 1024
	probeSteps    = 14

	// MinPageSize and MaxPageSize bound the page sizes the check
	// accepts.
	MinPageSize = 512
	MaxPageSize = 64 << 10
)

var ne = binary.NativeEndian

// meta is a decoded bbolt meta page.
type meta struct {
	magic, version, pageSize uint32
	root                     uint64 // root bucket's root page
	freelist                 uint64 // noFreelist when not persisted
	pgid                     uint64 // high water mark: pages [0, pgid) are in use
	txid                     uint64
	err                      string // why the meta is invalid; empty when valid
	magicOK                  bool
	headerID                 uint64 // the page header's id and flags
	headerFlags              uint16
}

func (m *meta) valid() bool { return m.err == "" }

// parseMeta decodes the meta stored in page bytes b (starting at the page
// header) and validates it as bbolt's Meta.Check does: magic, version,
// FNV-64a checksum.
func parseMeta(b []byte) meta {
	if len(b) < pageHeaderSize+metaSize {
		return meta{err: "too short for a meta page"}
	}
	d := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := decodeHeader(b)
	m := meta{
		headerID:    h.id,
		headerFlags: h.flags,
		magic:       ne.Uint32(d[0:]),
		version:     ne.Uint32(d[4:]),
		pageSize:    ne.Uint32(d[8:]),
		root:        ne.Uint64(d[16:]),
		freelist:    ne.Uint64(d[32:]),
		pgid:        ne.Uint64(d[40:]),
		txid:        ne.Uint64(d[48:]),
	}
	sum := fnv.New64a()
	_, _ = sum.Write(d[:metaChecksumOff])
	switch {
	case m.magic != boltMagic:
		m.err = fmt.Sprintf("bad magic %#08x", m.magic)
	case m.version != boltVersion:
		m.magicOK = true
		m.err = fmt.Sprintf("unsupported format version %d (want %d)", m.version, boltVersion)
	case sum.Sum64() != ne.Uint64(d[metaChecksumOff:]):
		m.magicOK = true
		m.err = "checksum mismatch"
	default:
		m.magicOK = true
	}
	return m
}

// readMetaAt reads the meta page at byte offset off. A short read (end of
// file) yields an invalid meta, not an error; other read errors are returned.
func readMetaAt(r io.ReaderAt, off, size int64, n int) (meta, error) {
	if off >= size {
		return meta{err: "beyond end of file"}, nil
	}
	if rest := size - off; rest < int64(n) {
		n = int(rest)
	}
	buf := make([]byte, n)
	got, err := r.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return meta{}, err
	}
	return parseMeta(buf[:got]), nil
}

// metaPair holds what bbolt sees when it opens a file: the page size it
// will use and the two meta pages at offsets 0 and pageSize.
type metaPair struct {
	pageSize uint64
	m        [2]meta
}

// findPageSize mirrors bbolt's getPageSize: meta 0 from the first 4 KiB if
// the file has that much and it validates; else the first valid meta found
// at 1 KiB << i. ok is false when bbolt finds none. seen reports whether any
// probed page carried bbolt's magic.
func findPageSize(r io.ReaderAt, size int64) (pageSize uint64, ok, magicSeen bool, err error) {
	if size >= firstMetaRead {
		m, err := readMetaAt(r, 0, size, firstMetaRead)
		if err != nil {
			return 0, false, false, err
		}
		if m.valid() {
			return uint64(m.pageSize), true, true, nil
		}
		magicSeen = m.magicOK
	} else {
		m, err := readMetaAt(r, 0, size, pageHeaderSize+metaSize)
		if err != nil {
			return 0, false, false, err
		}
		magicSeen = m.magicOK
	}
	m, _, found, err := probeMeta1(r, size, func(m meta) bool {
		magicSeen = magicSeen || m.magicOK
		return m.valid()
	})
	if err != nil || !found {
		return 0, false, magicSeen, err
	}
	return uint64(m.pageSize), true, true, nil
}

// probeMeta1 reads the metas where bbolt probes for meta 1 (1 KiB << i,
// db.go getPageSizeFromSecondMeta) and returns the first for which ok
// holds, with its offset; found is false if none does.
func probeMeta1(r io.ReaderAt, size int64, ok func(meta) bool) (m meta, off int64, found bool, err error) {
	for i := 0; i <= probeSteps; i++ {
		off = int64(probeMin) << i
		if off >= size-probeMin {
			break
		}
		if m, err = readMetaAt(r, off, size, pageHeaderSize+metaSize); err != nil {
			return meta{}, 0, false, err
		}
		if ok(m) {
			return m, off, true, nil
		}
	}
	return meta{}, 0, false, nil
}

// chooseMeta mirrors bbolt's DB.meta: the valid meta with the higher txid,
// meta 0 on a tie. It returns the index of the chosen meta, or -1.
func chooseMeta(p *metaPair) int {
	a, b := 0, 1
	if p.m[1].txid > p.m[0].txid {
		a, b = 1, 0
	}
	switch {
	case p.m[a].valid():
		return a
	case p.m[b].valid():
		return b
	}
	return -1
}

func isPowerOfTwo(v uint64) bool { return v != 0 && v&(v-1) == 0 }
