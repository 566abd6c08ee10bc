package filecheck

import (
	"fmt"
	"io"
)

// pageReader reads pages with ReadAt, never past the high water mark or the
// end of the file.
type pageReader struct {
	r        io.ReaderAt
	path     string
	size     int64
	pageSize uint64
	hwm      uint64 // meta.pgid: valid page ids are < hwm
}

// page is a page read into memory: its header and every byte of its span
// (the page and its overflow pages).
type page struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
	data     []byte // header included
}

func pageTypeName(flags uint16) string {
	switch flags {
	case branchPageFlag:
		return "branch"
	case leafPageFlag:
		return "leaf"
	case metaPageFlag:
		return "meta"
	case freelistPageFlag:
		return "freelist"
	}
	return fmt.Sprintf("unknown<%#x>", flags)
}

func decodeHeader(b []byte) page {
	return page{
		id:       ne.Uint64(b[0:]),
		flags:    ne.Uint16(b[8:]),
		count:    ne.Uint16(b[10:]),
		overflow: ne.Uint32(b[12:]),
	}
}

// read reads page id and its overflow pages into buf (grown as needed) and
// checks what bbolt's FastCheck asserts: the header names the page itself.
// The returned page's data aliases buf.
func (pr *pageReader) read(id uint64, buf *[]byte) (page, error) {
	if id >= pr.hwm {
		return page{}, corruptf(pr.path, int64(id), "page id beyond high water mark %d", pr.hwm)
	}
	first, err := pr.readSpan(id, 1, buf)
	if err != nil {
		return page{}, err
	}
	p := decodeHeader(first)
	if p.id != id {
		return page{}, corruptf(pr.path, int64(id), "header names page %d", p.id)
	}
	if uint64(p.overflow) >= pr.hwm-id {
		return page{}, corruptf(pr.path, int64(id), "%d overflow pages run past high water mark %d", p.overflow, pr.hwm)
	}
	if p.overflow == 0 {
		p.data = first
		return p, nil
	}
	if p.data, err = pr.readSpan(id, uint64(p.overflow)+1, buf); err != nil {
		return page{}, err
	}
	return p, nil
}

// readSpan reads n pages starting at id into buf.
func (pr *pageReader) readSpan(id, n uint64, buf *[]byte) ([]byte, error) {
	// id+n <= hwm and hwm*pageSize <= size were checked, so this cannot
	// overflow; the size check is a second line of defence.
	off, length := id*pr.pageSize, n*pr.pageSize
	if off+length > uint64(pr.size) {
		return nil, corruptf(pr.path, int64(id), "%d page(s) run past the end of the file (%d bytes)", n, pr.size)
	}
	if uint64(cap(*buf)) < length {
		*buf = make([]byte, length)
	}
	b := (*buf)[:length]
	got, err := pr.r.ReadAt(b, int64(off))
	if got == len(b) {
		return b, nil
	}
	if err == nil || err == io.EOF {
		// The file shrank under us.
		return nil, corruptf(pr.path, int64(id), "short read: %d of %d bytes", got, length)
	}
	return nil, fmt.Errorf("filecheck: %s: read page %d: %w", pr.path, id, err)
}

// elemRange returns the bytes [start, start+n) of b, or false if they are
// not inside b. The arithmetic is done in uint64 so that no uint32 field
// read from the file can overflow it.
func elemRange(b []byte, start, n uint64) ([]byte, bool) {
	end := start + n
	if end < start || end > uint64(len(b)) {
		return nil, false
	}
	return b[start:end], true
}

// leafElem is one decoded leaf element.
type leafElem struct {
	flags      uint32
	key, value []byte
}

// leafElemAt decodes leaf element i of a page whose bytes (header included)
// are b. Positions are relative to the element itself, as bbolt stores them.
func leafElemAt(b []byte, i int) (leafElem, error) {
	e := uint64(pageHeaderSize + i*elementSize)
	flags := ne.Uint32(b[e:])
	pos, ksize, vsize := uint64(ne.Uint32(b[e+4:])), uint64(ne.Uint32(b[e+8:])), uint64(ne.Uint32(b[e+12:]))
	if ksize == 0 {
		return leafElem{}, fmt.Errorf("leaf element %d has an empty key", i)
	}
	if flags&^bucketLeafFlag != 0 {
		return leafElem{}, fmt.Errorf("leaf element %d has unknown flags %#x", i, flags)
	}
	kv, ok := elemRange(b, e+pos, ksize+vsize)
	if !ok {
		return leafElem{}, fmt.Errorf("leaf element %d (pos %d, key %d bytes, value %d bytes) runs past its page (%d bytes)", i, pos, ksize, vsize, len(b))
	}
	return leafElem{flags: flags, key: kv[:ksize], value: kv[ksize:]}, nil
}

// branchElemAt decodes branch element i of a page whose bytes are b.
func branchElemAt(b []byte, i int) (key []byte, child uint64, err error) {
	e := uint64(pageHeaderSize + i*elementSize)
	pos, ksize := uint64(ne.Uint32(b[e:])), uint64(ne.Uint32(b[e+4:]))
	child = ne.Uint64(b[e+8:])
	if ksize == 0 {
		return nil, 0, fmt.Errorf("branch element %d has an empty key", i)
	}
	key, ok := elemRange(b, e+pos, ksize)
	if !ok {
		return nil, 0, fmt.Errorf("branch element %d (pos %d, key %d bytes) runs past its page (%d bytes)", i, pos, ksize, len(b))
	}
	return key, child, nil
}

// checkElementTable checks that count elements fit in b after the header.
func checkElementTable(b []byte, count uint16) error {
	if need := pageHeaderSize + int(count)*elementSize; need > len(b) {
		return fmt.Errorf("%d elements need %d bytes, page has %d", count, need, len(b))
	}
	return nil
}
