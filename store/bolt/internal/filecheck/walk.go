package filecheck

import (
	"bytes"
	"context"
	"fmt"
)

// maxDepth bounds the nesting of pages and buckets the walk follows. A
// bbolt B+tree has a fan-out of at least two, so a bucket's tree is at most
// 64 levels deep; the rest is headroom for nested buckets. A deeper chain
// can only come from a corrupt file, and the bound keeps the walk's stack
// small whatever the file says.
const maxDepth = 1024

// ctxCheckEvery is how many pages the walk reads between context checks.
const ctxCheckEvery = 256

// bitset is a set of page ids below the high water mark.
type bitset []uint64

func newBitset(n uint64) bitset    { return make(bitset, (n+63)/64) }
func (s bitset) has(i uint64) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s bitset) set(i uint64)      { s[i/64] |= 1 << (i % 64) }
func (s bitset) hasAny() bool      { return len(s) > 0 }

// walker walks a bucket tree from a root page, checking every page it reads.
type walker struct {
	ctx   context.Context
	pr    *pageReader
	reach bitset   // pages reached so far: metas, freelist, tree pages
	freed bitset   // pages the persisted freelist names; empty if none
	bufs  [][]byte // one read buffer per depth, reused
	pages int      // pages read, for the periodic context check
	deep  bool     // walk every bucket fully
	// levels: unless deep, the buckets nested fewer than levels below
	// the root bucket are walked fully, and the root page of those
	// exactly levels below is checked; deeper ones are not read.
	levels int
}

// pos is where the walk is: the nesting depth (pages and buckets), the
// bucket level (0 for the root bucket, 1 for the buckets in it, ...) and
// whether the page belongs to the root bucket, whose entries can only be
// buckets (bbolt offers no way to put a plain key there, and Tx.ForEach
// hands callers a nil *Bucket for one).
type pos struct {
	depth      int
	level      int
	rootBucket bool
}

func (p pos) below() pos { return pos{depth: p.depth + 1, level: p.level, rootBucket: p.rootBucket} }

// full reports whether the bucket the walk is in is walked below its root
// page.
func (w *walker) full(at pos) bool { return w.deep || at.level < w.levels }

func (w *walker) buf(depth int) *[]byte {
	for len(w.bufs) <= depth {
		w.bufs = append(w.bufs, nil)
	}
	return &w.bufs[depth]
}

// claim marks page id and its overflow pages as reached, rejecting a page
// reached twice (a cycle or a shared subtree) or reachable yet free.
func (w *walker) claim(p page) error {
	for i := uint64(0); i <= uint64(p.overflow); i++ {
		id := p.id + i
		if w.reach.has(id) {
			return corruptf(w.pr.path, int64(id), "referenced more than once (cycle or shared page)")
		}
		if w.freed.hasAny() && w.freed.has(id) {
			return corruptf(w.pr.path, int64(id), "reachable from the tree but on the freelist")
		}
		w.reach.set(id)
	}
	return nil
}

// walkBucket checks the tree of a bucket whose root is page root. Unless
// the walk is full at this bucket's level (see walker.full), only the root
// page itself is checked.
func (w *walker) walkBucket(root uint64, at pos) error {
	if root < 2 {
		return corruptf(w.pr.path, int64(root), "bucket root is a meta page")
	}
	return w.walkPage(root, nil, nil, at)
}

// walkPage checks page id, whose keys must lie in [lo, hi) (nil: unbounded),
// and, when the walk is full at its level, everything below it.
func (w *walker) walkPage(id uint64, lo, hi []byte, at pos) error {
	if at.depth >= maxDepth {
		return corruptf(w.pr.path, int64(id), "tree deeper than %d levels", maxDepth)
	}
	if w.pages++; w.pages%ctxCheckEvery == 0 {
		if err := w.ctx.Err(); err != nil {
			return fmt.Errorf("filecheck: %s: %w", w.pr.path, err)
		}
	}
	p, err := w.pr.read(id, w.buf(at.depth))
	if err != nil {
		return err
	}
	if err := w.claim(p); err != nil {
		return err
	}
	switch p.flags {
	case branchPageFlag:
		return w.walkBranch(p, lo, hi, at)
	case leafPageFlag:
		return w.walkLeaf(p.data, int64(id), p.count, lo, hi, at)
	}
	return corruptf(w.pr.path, int64(id), "%s page where a branch or leaf page belongs", pageTypeName(p.flags))
}

func (w *walker) walkBranch(p page, lo, hi []byte, at pos) error {
	where := int64(p.id)
	if p.count == 0 {
		return corruptf(w.pr.path, where, "branch page without elements")
	}
	if err := checkElementTable(p.data, p.count); err != nil {
		return corruptf(w.pr.path, where, "%v", err)
	}
	// Check every key on the page before descending, so that a bad page
	// is reported as itself rather than as a symptom in a child.
	prev := lo
	for i := 0; i < int(p.count); i++ {
		key, child, err := branchElemAt(p.data, i)
		if err != nil {
			return corruptf(w.pr.path, where, "%v", err)
		}
		if err := checkKeyOrder(key, prev, i == 0, hi); err != nil {
			return corruptf(w.pr.path, where, "branch element %d: %v", i, err)
		}
		if child < 2 {
			return corruptf(w.pr.path, where, "branch element %d points to meta page %d", i, child)
		}
		if child >= w.pr.hwm {
			return corruptf(w.pr.path, where, "branch element %d points to page %d beyond high water mark %d", i, child, w.pr.hwm)
		}
		prev = key
	}
	if !w.full(at) {
		return nil
	}
	for i := 0; i < int(p.count); i++ {
		key, child, _ := branchElemAt(p.data, i)
		next := hi
		if i+1 < int(p.count) {
			next, _, _ = branchElemAt(p.data, i+1)
		}
		if err := w.walkPage(child, key, next, at.below()); err != nil {
			return err
		}
	}
	return nil
}

// walkLeaf checks a leaf page (a file page or an inline bucket's page)
// whose bytes, header included, are b. where is the page id to report.
func (w *walker) walkLeaf(b []byte, where int64, count uint16, lo, hi []byte, at pos) error {
	if err := checkElementTable(b, count); err != nil {
		return corruptf(w.pr.path, where, "%v", err)
	}
	prev := lo
	for i := 0; i < int(count); i++ {
		e, err := leafElemAt(b, i)
		if err != nil {
			return corruptf(w.pr.path, where, "%v", err)
		}
		if err := checkKeyOrder(e.key, prev, i == 0, hi); err != nil {
			return corruptf(w.pr.path, where, "leaf element %d: %v", i, err)
		}
		prev = e.key
		if e.flags&bucketLeafFlag == 0 {
			if at.rootBucket {
				return corruptf(w.pr.path, where, "leaf element %d: plain key %q in the root bucket, where only buckets can be", i, e.key)
			}
			continue
		}
		if err := w.walkBucketValue(e, where, at); err != nil {
			return err
		}
	}
	return nil
}

// walkBucketValue checks the nested bucket stored as leaf element i's value:
// a bucket header, followed for an inline bucket by its leaf page.
func (w *walker) walkBucketValue(e leafElem, where int64, at pos) error {
	if len(e.value) < bucketHeaderSize {
		return corruptf(w.pr.path, where, "bucket %q: value of %d bytes is shorter than a bucket header", e.key, len(e.value))
	}
	root := ne.Uint64(e.value)
	if root != 0 {
		if root < 2 {
			return corruptf(w.pr.path, where, "bucket %q: root is meta page %d", e.key, root)
		}
		if root >= w.pr.hwm {
			return corruptf(w.pr.path, where, "bucket %q: root page %d beyond high water mark %d", e.key, root, w.pr.hwm)
		}
		nested := pos{depth: at.depth + 1, level: at.level + 1}
		if !w.deep && nested.level > w.levels {
			return nil
		}
		return w.walkBucket(root, nested)
	}
	inline := e.value[bucketHeaderSize:]
	if len(inline) < pageHeaderSize {
		return corruptf(w.pr.path, where, "inline bucket %q: %d bytes cannot hold a page header", e.key, len(inline))
	}
	h := decodeHeader(inline)
	if h.flags != leafPageFlag {
		return corruptf(w.pr.path, where, "inline bucket %q: %s page, want leaf", e.key, pageTypeName(h.flags))
	}
	if at.depth+1 >= maxDepth {
		return corruptf(w.pr.path, where, "buckets nested deeper than %d levels", maxDepth)
	}
	if err := w.walkLeaf(inline, where, h.count, nil, nil, pos{depth: at.depth + 1, level: at.level + 1}); err != nil {
		return err
	}
	return nil
}

// checkKeyOrder checks key > prev (key >= prev for the first key of a page,
// whose prev is the parent's lower bound) and key < hi.
func checkKeyOrder(key, prev []byte, first bool, hi []byte) error {
	if prev != nil {
		c := bytes.Compare(prev, key)
		if c > 0 || (c == 0 && !first) {
			return fmt.Errorf("key %q out of order after %q", key, prev)
		}
	}
	if hi != nil && bytes.Compare(key, hi) >= 0 {
		return fmt.Errorf("key %q not below the next key %q of its parent", key, hi)
	}
	return nil
}
