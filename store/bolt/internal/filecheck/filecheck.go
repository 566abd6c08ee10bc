// Package filecheck decides whether a file is safe to hand to bbolt.
//
// bbolt memory-maps its file and trusts what it finds there: a truncated
// file makes it touch mapped memory past the end of the file (SIGBUS, which
// no recover can catch), and a garbage page makes it panic or read wild
// offsets. Check inspects the file with ordinary reads, never a mapping,
// checks the structures bbolt would trust, and rejects a bad file with an
// error wrapping ErrCorrupt before bbolt sees it.
//
// What is checked (bbolt v1.4 on-disk format):
//
//   - the path is a regular file; an empty file (a database bbolt will
//     initialise) is accepted;
//   - the meta pages: magic, version and FNV-64a checksum, choosing the meta
//     bbolt would choose (the valid one with the higher txid, so a file with
//     one torn or zeroed meta page is accepted when the other is sound);
//   - the page size is a power of two from 512 B to 64 KiB and the same in
//     the meta bbolt reads it from and the meta it uses;
//   - the high water mark (meta.pgid) times the page size fits the file:
//     the check that keeps bbolt from touching memory past the file's end;
//   - the root bucket's page and the persisted freelist: page types, page
//     headers naming themselves, freelist ids distinct, not meta pages and
//     below the high water mark, the freelist fitting its pages;
//   - the headers of both meta pages (bbolt's Tx.Check asserts them in a
//     goroutine of its own, so a zeroed meta page would crash a check even
//     though bbolt reads the file through the other meta);
//   - unless Options.SkipTreeWalk (ignored when the freelist is not
//     persisted, because bbolt then walks the whole tree on open and panics
//     in a goroutine on what it finds): every page reachable from the root, including nested
//     and inline buckets, read with pread and bounded by the high water
//     mark: branch or leaf type, element tables and every key and value
//     inside the page and its overflow pages, keys non-empty and strictly
//     increasing within a page and within the range their parent gives
//     them, no page reached twice (cycles, shared subtrees), no reachable
//     page on the freelist, and no page below the high water mark that is
//     neither reachable nor free (as bbolt's own Tx.Check demands).
//
// Check reads the file as it is when called; it does not lock it. The
// caller checks the file before bbolt opens it and must keep other writers
// away in between (bbolt's own flock does this once bbolt has opened it).
// A file bbolt has opened is checked in a read transaction (CheckTree),
// in the background: Background runs that check and keeps its verdict.
package filecheck

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Options tunes Check. The zero value is the full check.
type Options struct {
	// SkipTreeWalk limits Check to the shallow checks: the meta pages,
	// the file size against the high water mark, the root bucket's page
	// and the freelist. That still rules out the truncated file (the
	// SIGBUS), but a garbage page inside the tree goes undetected and can
	// still make bbolt panic or fault when it reads that page later. The
	// walk reads every page in use once: about 0.8 ms per MB from the page
	// cache and 2.5 ms per MB from disk (BenchmarkCheck, 230 MB file);
	// set this only where that open latency cannot be afforded. Default
	// false. Ignored when the file's freelist is not persisted: bbolt then
	// walks the whole tree itself on a read-write open.
	SkipTreeWalk bool
	// BucketLevels, with SkipTreeWalk, extends the shallow check to the
	// buckets a reader opens first: the buckets nested fewer than
	// BucketLevels levels below the root bucket (level 0) are walked
	// fully, and the root page of each bucket exactly BucketLevels levels
	// below is checked. The cost grows with the number of those buckets,
	// not with the data below them. Default 0: the root bucket's root page
	// only.
	BucketLevels int
}

// Report says what Check checked.
type Report struct {
	// Walked is true when every page reachable from the root was read
	// and checked (no Options.SkipTreeWalk, or a file without a
	// persisted freelist, or an empty file), false after the shallow
	// check only.
	Walked bool
	// Persisted is true when the file has a persisted freelist: bbolt
	// opens it without walking its tree.
	Persisted bool
}

// Check checks that the file at path is a sound bbolt database, or
// empty. It returns nil for a file bbolt can open and read without
// faulting; an error wrapping ErrCorrupt (ErrNotBolt when the file is not a
// bbolt database at all, or not a regular file) naming the page and the
// problem, with a *CorruptionError in its chain; an error wrapping
// fs.ErrNotExist when there is no file; or an I/O error from the file
// system, wrapped with the path. It returns ctx's error, wrapped, if ctx
// ends during the walk. Check never writes to the file and is safe for
// concurrent use.
func Check(ctx context.Context, path string, opts Options) error {
	_, err := CheckReport(ctx, path, opts)
	return err
}

// CheckReport is Check that also reports what it checked.
func CheckReport(ctx context.Context, path string, opts Options) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("filecheck: %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Report{}, fmt.Errorf("filecheck: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Report{}, notBoltf(path, "not a regular file (%s)", fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("filecheck: %w", err)
	}
	defer func() { _ = f.Close() }()
	// Stat again through the open file: the size is what the reads see.
	if fi, err = f.Stat(); err != nil {
		return Report{}, fmt.Errorf("filecheck: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Report{}, notBoltf(path, "not a regular file (%s)", fi.Mode().Type())
	}
	var rep Report
	err = validate(ctx, f, fi.Size(), path, opts, &rep)
	return rep, err
}

// validate checks the size bytes readable from r and fills rep. path is
// only reported.
func validate(ctx context.Context, r io.ReaderAt, size int64, path string, opts Options, rep *Report) error {
	if size == 0 {
		rep.Walked = true
		return nil
	}
	pageSize, ok, magicSeen, err := findPageSize(r, size)
	if err != nil {
		return fmt.Errorf("filecheck: %s: read meta: %w", path, err)
	}
	if !ok {
		if !magicSeen {
			return notBoltf(path, "no bbolt meta page (%d bytes)", size)
		}
		// Report why meta 0 and meta 1 failed.
		return corruptf(path, noPage, "no valid meta page (%s)", describeMetas(r, size))
	}
	if !isPowerOfTwo(pageSize) || pageSize < MinPageSize || pageSize > MaxPageSize {
		return corruptf(path, noPage, "page size %d is not a power of two in [%d, %d]", pageSize, MinPageSize, MaxPageSize)
	}
	if uint64(size) < 2*pageSize {
		return corruptf(path, noPage, "file of %d bytes is smaller than two %d-byte meta pages", size, pageSize)
	}
	var mp metaPair
	mp.pageSize = pageSize
	for i := range mp.m {
		if mp.m[i], err = readMetaAt(r, int64(i)*int64(pageSize), size, pageHeaderSize+metaSize); err != nil {
			return fmt.Errorf("filecheck: %s: read meta %d: %w", path, i, err)
		}
	}
	chosen := chooseMeta(&mp)
	if chosen < 0 {
		return corruptf(path, noPage, "no valid meta page at page size %d (meta 0: %s; meta 1: %s)", pageSize, mp.m[0].err, mp.m[1].err)
	}
	// bbolt's Tx.Check asserts that both meta pages' headers name them as
	// meta pages, in a goroutine of its own: a zeroed or overwritten meta
	// page would take the process down there even though bbolt can read
	// the file through the other meta. A torn meta (bad checksum, header
	// intact) is left to bbolt's fallback.
	for i := range mp.m {
		if h := mp.m[i]; h.headerID != uint64(i) || h.headerFlags != metaPageFlag {
			return corruptf(path, int64(i), "meta page header damaged (id %d, %s page)", h.headerID, pageTypeName(h.headerFlags))
		}
	}
	m := mp.m[chosen]
	if uint64(m.pageSize) != pageSize {
		return corruptf(path, int64(chosen), "meta page size %d differs from the page size %d bbolt would use", m.pageSize, pageSize)
	}
	// THE check: bbolt maps the file and reads any page below pgid; a page
	// past the end of the file is a SIGBUS.
	if m.pgid < 2 || m.pgid > uint64(size)/pageSize {
		return corruptf(path, int64(chosen), "high water mark %d pages (%d bytes) does not fit a file of %d bytes (truncated?)", m.pgid, m.pgid*pageSize, size)
	}
	if m.root >= m.pgid {
		return corruptf(path, int64(chosen), "root bucket page %d beyond high water mark %d", m.root, m.pgid)
	}
	if m.freelist != noFreelist && m.freelist >= m.pgid {
		return corruptf(path, int64(chosen), "freelist page %d beyond high water mark %d", m.freelist, m.pgid)
	}

	w := &walker{
		ctx:   ctx,
		pr:    &pageReader{r: r, path: path, size: size, pageSize: pageSize, hwm: m.pgid},
		reach: newBitset(m.pgid),
	}
	w.reach.set(0)
	w.reach.set(1)
	if m.freelist != noFreelist {
		if w.freed, err = w.checkFreelist(m.freelist); err != nil {
			return err
		}
	}
	// Without a persisted freelist bbolt rebuilds it on a read-write open
	// by walking the whole tree, panicking on what it does not like.
	w.deep = !opts.SkipTreeWalk || m.freelist == noFreelist
	w.levels = opts.BucketLevels
	rep.Walked, rep.Persisted = w.deep, m.freelist != noFreelist
	if err := w.walkBucket(m.root, pos{rootBucket: true}); err != nil {
		return err
	}
	if w.deep && m.freelist != noFreelist {
		for id := uint64(2); id < m.pgid; id++ {
			if !w.reach.has(id) && !w.freed.has(id) {
				return corruptf(path, int64(id), "neither reachable nor on the freelist")
			}
		}
	}
	return nil
}

// describeMetas says why meta 0 and meta 1 are invalid, for the error
// message of a file with bbolt magic but no valid meta. Meta 1 is looked
// for where bbolt probes for it (1 KiB << i): the first position whose
// page has bbolt's magic, as a torn meta 1 keeps it; else (meta 1 zeroed
// or overwritten) after the page size meta 0 records, when meta 0 has the
// magic and a page size in range; else at the operating system's page
// size.
func describeMetas(r io.ReaderAt, size int64) string {
	m0, err := readMetaAt(r, 0, size, pageHeaderSize+metaSize)
	if err != nil {
		return "unreadable"
	}
	m1, at, found, err := probeMeta1(r, size, func(m meta) bool { return m.magicOK })
	if err != nil {
		return "unreadable"
	}
	if !found {
		at = int64(os.Getpagesize())
		if ps := uint64(m0.pageSize); m0.magicOK && isPowerOfTwo(ps) && ps >= MinPageSize && ps <= MaxPageSize {
			at = int64(ps)
		}
		if m1, err = readMetaAt(r, at, size, pageHeaderSize+metaSize); err != nil {
			return "unreadable"
		}
	}
	return fmt.Sprintf("meta 0: %s; meta 1 (at %d): %s", m0.err, at, m1.err)
}
