package filecheck

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var ne64 = binary.NativeEndian

// want is what Check must return: nil, or an error wrapping the sentinel.
type want struct {
	err    error  // nil, ErrCorrupt or ErrNotBolt
	reason string // substring of the error message, when err != nil
}

var ok = want{}

func corrupt(reason string) want { return want{err: ErrCorrupt, reason: reason} }
func notBolt(reason string) want { return want{err: ErrNotBolt, reason: reason} }

func checkWant(t *testing.T, err error, w want) {
	t.Helper()
	switch {
	case w.err == nil:
		if err != nil {
			t.Fatalf("Check = %v, want nil", err)
		}
	case err == nil:
		t.Fatalf("Check = nil, want %v (%q)", w.err, w.reason)
	case !errors.Is(err, w.err):
		t.Fatalf("Check = %v, want it to wrap %v", err, w.err)
	case w.err == ErrCorrupt && errors.Is(err, ErrNotBolt):
		t.Fatalf("Check = %v, want ErrCorrupt but not ErrNotBolt", err)
	case !strings.Contains(err.Error(), w.reason):
		t.Fatalf("Check = %v, want it to mention %q", err, w.reason)
	default:
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("Check = %v, want a *CorruptionError in the chain", err)
		}
	}
}

// mutation edits a copy of the fixture file's bytes.
type mutation func(t *testing.T, f *fixture, b []byte) []byte

type validateCase struct {
	name    string
	mutate  mutation
	shallow want // with Options{SkipTreeWalk: true}
	deep    want // with Options{}
}

// validateCases are targeted corruptions of the standard fixture, one per
// check Check makes.
func validateCases() []validateCase {
	setMetaBoth := func(field int, v uint64, width int) mutation {
		return func(t *testing.T, f *fixture, b []byte) []byte {
			f.setMeta(b, 0, field, v, width, true)
			f.setMeta(b, 1, field, v, width, true)
			return b
		}
	}
	setChosen := func(field int, v func(f *fixture) uint64) mutation {
		return func(t *testing.T, f *fixture, b []byte) []byte {
			c, _ := f.chosenMeta(b)
			f.setMeta(b, c, field, v(f), 8, true)
			return b
		}
	}
	return []validateCase{
		{name: "intact", mutate: func(t *testing.T, f *fixture, b []byte) []byte { return b }, shallow: ok, deep: ok},

		// Truncation and size.
		{name: "truncated one byte short of the high water mark",
			mutate:  func(t *testing.T, f *fixture, b []byte) []byte { return b[:f.hwm*f.pageSize-1] },
			shallow: corrupt("high water mark"), deep: corrupt("high water mark")},
		{name: "truncated to half",
			mutate:  func(t *testing.T, f *fixture, b []byte) []byte { return b[:len(b)/2] },
			shallow: corrupt("high water mark"), deep: corrupt("high water mark")},
		{name: "truncated to the two meta pages",
			mutate:  func(t *testing.T, f *fixture, b []byte) []byte { return b[:2*f.pageSize] },
			shallow: corrupt("high water mark"), deep: corrupt("high water mark")},
		{name: "truncated inside meta page 1",
			mutate:  func(t *testing.T, f *fixture, b []byte) []byte { return b[:f.pageSize+100] },
			shallow: corrupt("smaller than two"), deep: corrupt("smaller than two")},
		{name: "truncated inside meta page 0",
			mutate:  func(t *testing.T, f *fixture, b []byte) []byte { return b[:100] },
			shallow: corrupt("no valid meta"), deep: corrupt("no valid meta")},
		{name: "grown with zeros past the high water mark",
			mutate:  func(t *testing.T, f *fixture, b []byte) []byte { return append(b, make([]byte, 3*f.pageSize)...) },
			shallow: ok, deep: ok},

		// Meta pages.
		{name: "chosen meta torn (bad checksum), bbolt falls back",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				c, _ := f.chosenMeta(b)
				b[c*f.pageSize+metaOff+metaPgidOff] ^= 0xFF
				return b
			},
			shallow: ok, deep: ok},
		{name: "other meta torn (bad checksum)",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				_, o := f.chosenMeta(b)
				b[o*f.pageSize+metaOff+metaRootOff] ^= 0xFF
				return b
			},
			shallow: ok, deep: ok},
		{name: "both metas torn",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				b[metaOff+metaRootOff] ^= 0xFF
				b[f.pageSize+metaOff+metaRootOff] ^= 0xFF
				return b
			},
			shallow: corrupt("checksum mismatch"), deep: corrupt("checksum mismatch")},
		{name: "meta page 0 zeroed",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				clear(f.page(b, 0))
				return b
			},
			shallow: corrupt("meta page header damaged"), deep: corrupt("meta page header damaged")},
		{name: "meta page 1 zeroed",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				clear(f.page(b, 1))
				return b
			},
			shallow: corrupt("meta page header damaged"), deep: corrupt("meta page header damaged")},
		{name: "both meta pages zeroed",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				clear(b[:2*f.pageSize])
				return b
			},
			shallow: notBolt("no bbolt meta page"), deep: notBolt("no bbolt meta page")},
		{name: "other meta page header says leaf",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				_, o := f.chosenMeta(b)
				binary.NativeEndian.PutUint16(b[o*f.pageSize+hdrFlags:], 0x02)
				return b
			},
			shallow: corrupt("meta page header damaged"), deep: corrupt("meta page header damaged")},
		{name: "bad magic in both metas",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				f.setMeta(b, 0, 0, 0x12345678, 4, true)
				f.setMeta(b, 1, 0, 0x12345678, 4, true)
				return b
			},
			shallow: notBolt("no bbolt meta page"), deep: notBolt("no bbolt meta page")},
		{name: "format version 3 in both metas",
			mutate:  setMetaBoth(metaVersion, 3, 4),
			shallow: corrupt("unsupported format version 3"), deep: corrupt("unsupported format version 3")},
		{name: "page size not a power of two",
			mutate:  setMetaBoth(metaPageSizeOff, 3000, 4),
			shallow: corrupt("page size 3000"), deep: corrupt("page size 3000")},
		{name: "page size 256",
			mutate:  setMetaBoth(metaPageSizeOff, 256, 4),
			shallow: corrupt("page size 256"), deep: corrupt("page size 256")},
		{name: "page size of the metas disagree",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				// bbolt takes the page size from meta 0 but may use meta 1.
				f.setMeta(b, 0, metaTxidOff, 1, 8, true)
				f.setMeta(b, 1, metaPageSizeOff, uint64(2*f.pageSize), 4, true)
				return b
			},
			shallow: corrupt("differs from the page size"), deep: corrupt("differs from the page size")},
		{name: "high water mark past the end of the file",
			mutate:  setChosen(metaPgidOff, func(f *fixture) uint64 { return uint64(f.size/f.pageSize + 1) }),
			shallow: corrupt("high water mark"), deep: corrupt("high water mark")},
		{name: "high water mark overflowing",
			mutate:  setChosen(metaPgidOff, func(f *fixture) uint64 { return 1<<64 - 2 }),
			shallow: corrupt("high water mark"), deep: corrupt("high water mark")},
		{name: "root bucket beyond the high water mark",
			mutate:  setChosen(metaRootOff, func(f *fixture) uint64 { return uint64(f.hwm) }),
			shallow: corrupt("root bucket page"), deep: corrupt("root bucket page")},
		{name: "root bucket is meta page 1",
			mutate:  setChosen(metaRootOff, func(f *fixture) uint64 { return 1 }),
			shallow: corrupt("bucket root is a meta page"), deep: corrupt("bucket root is a meta page")},
		{name: "root bucket is the freelist page",
			mutate:  setChosen(metaRootOff, func(f *fixture) uint64 { return uint64(f.freelist) }),
			shallow: corrupt("referenced more than once"), deep: corrupt("referenced more than once")},
		{name: "freelist beyond the high water mark",
			mutate:  setChosen(metaFreelistOff, func(f *fixture) uint64 { return uint64(f.hwm + 7) }),
			shallow: corrupt("freelist page"), deep: corrupt("freelist page")},
		{name: "freelist is meta page 0",
			mutate:  setChosen(metaFreelistOff, func(f *fixture) uint64 { return 0 }),
			shallow: corrupt("freelist is a meta page"), deep: corrupt("freelist is a meta page")},
		{name: "freelist points at a leaf page",
			mutate:  setChosen(metaFreelistOff, func(f *fixture) uint64 { return uint64(f.leaves[0]) }),
			shallow: corrupt("leaf page where the freelist belongs"), deep: corrupt("leaf page where the freelist belongs")},
	}
}

// pageCases corrupt the freelist and tree pages.
func pageCases() []validateCase {
	return []validateCase{
		{name: "freelist count overflows its page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				p := f.page(b, f.freelist)
				binary.NativeEndian.PutUint16(p[hdrCount:], 0xFFFF)
				ne64.PutUint64(p[16:], 1<<40)
				return b
			},
			shallow: corrupt("does not fit"), deep: corrupt("does not fit")},
		{name: "freelist names meta page 1",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.page(b, f.freelist)[16:], 1)
				return b
			},
			shallow: corrupt("freelist names meta page 1"), deep: corrupt("freelist names meta page 1")},
		{name: "freelist names a page beyond the high water mark",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.page(b, f.freelist)[16:], uint64(f.hwm))
				return b
			},
			shallow: corrupt("beyond high water mark"), deep: corrupt("beyond high water mark")},
		{name: "freelist names a page twice",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				p := f.page(b, f.freelist)
				copy(p[24:32], p[16:24])
				return b
			},
			shallow: corrupt("twice"), deep: corrupt("twice")},
		{name: "freelist names itself",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.page(b, f.freelist)[16:], uint64(f.freelist))
				return b
			},
			shallow: corrupt("in use by the freelist itself"), deep: corrupt("in use by the freelist itself")},
		{name: "freelist names a live leaf page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.page(b, f.freelist)[16:], uint64(f.leaves[len(f.leaves)/2]))
				return b
			},
			// The shallow check does not visit the leaf; bbolt would
			// reuse it, losing data but not faulting.
			shallow: ok, deep: corrupt("reachable from the tree but on the freelist")},
		{name: "freelist drops a free page (leak)",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				p := f.page(b, f.freelist)
				n := binary.NativeEndian.Uint16(p[hdrCount:])
				binary.NativeEndian.PutUint16(p[hdrCount:], n-1)
				return b
			},
			shallow: ok, deep: corrupt("neither reachable nor on the freelist")},
		{name: "freelist overflow past the high water mark",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				binary.NativeEndian.PutUint32(f.page(b, f.freelist)[hdrOverflow:], uint32(f.hwm))
				return b
			},
			shallow: corrupt("overflow pages run past"), deep: corrupt("overflow pages run past")},
		{name: "root page header names another page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.page(b, f.rootPage(b))[hdrID:], 12345)
				return b
			},
			shallow: corrupt("header names page 12345"), deep: corrupt("header names page 12345")},
		{name: "plain key in the root bucket",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				binary.NativeEndian.PutUint32(f.elem(b, f.rootPage(b), 0)[0:], 0)
				return b
			},
			shallow: corrupt("plain key \"items\" in the root bucket"), deep: corrupt("plain key \"items\" in the root bucket")},
		{name: "root page typed as freelist",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				binary.NativeEndian.PutUint16(f.page(b, f.rootPage(b))[hdrFlags:], 0x10)
				return b
			},
			shallow: corrupt("freelist page where a branch or leaf page belongs"), deep: corrupt("freelist page where a branch or leaf page belongs")},
		{name: "branch page without elements",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				binary.NativeEndian.PutUint16(f.page(b, f.branch)[hdrCount:], 0)
				return b
			},
			shallow: ok, deep: corrupt("branch page without elements")},
		{name: "branch element table larger than its page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				binary.NativeEndian.PutUint16(f.page(b, f.branch)[hdrCount:], 0xFFFE)
				return b
			},
			shallow: ok, deep: corrupt("elements need")},
		{name: "branch key position past its page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				binary.NativeEndian.PutUint32(f.elem(b, f.branch, 1)[0:], 0xFFFFFFF0)
				return b
			},
			shallow: ok, deep: corrupt("runs past its page")},
		{name: "branch child is a meta page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.elem(b, f.branch, 2)[8:], 0)
				return b
			},
			shallow: ok, deep: corrupt("points to meta page 0")},
		{name: "branch child beyond the high water mark",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.elem(b, f.branch, 2)[8:], uint64(f.hwm))
				return b
			},
			shallow: ok, deep: corrupt("beyond high water mark")},
		{name: "branch child points at its own page (cycle)",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				ne64.PutUint64(f.elem(b, f.branch, 2)[8:], uint64(f.branch))
				return b
			},
			shallow: ok, deep: corrupt("referenced more than once")},
		{name: "two branch elements share a child",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				copy(f.elem(b, f.branch, 3)[8:], f.elem(b, f.branch, 2)[8:16])
				return b
			},
			shallow: ok, deep: corrupt("referenced more than once")},
		{name: "branch keys out of order",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				e := f.elems(b, f.branch)
				b[e[2].keyAt+len(e[2].key)-1] = 0xFF
				b[e[2].keyAt+4] = '9'
				return b
			},
			shallow: ok, deep: corrupt("out of order")},
		{name: "leaf page overwritten with random bytes",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				rng := rand.New(rand.NewPCG(7, 7))
				leaf := f.elems(b, f.branch)[3].child
				for i := range f.page(b, leaf) {
					b[leaf*f.pageSize+i] = byte(rng.IntN(256))
				}
				return b
			},
			shallow: ok, deep: corrupt("")},
		{name: "leaf element with an empty key",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				leaf := f.elems(b, f.branch)[1].child
				binary.NativeEndian.PutUint32(f.elem(b, leaf, 0)[8:], 0)
				return b
			},
			shallow: ok, deep: corrupt("empty key")},
		{name: "leaf value past its page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				leaf := f.elems(b, f.branch)[1].child
				binary.NativeEndian.PutUint32(f.elem(b, leaf, 0)[12:], 0xFFFFFFFF)
				return b
			},
			shallow: ok, deep: corrupt("runs past its page")},
		{name: "leaf element with unknown flags",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				leaf := f.elems(b, f.branch)[1].child
				binary.NativeEndian.PutUint32(f.elem(b, leaf, 0)[0:], 0x80)
				return b
			},
			shallow: ok, deep: corrupt("unknown flags")},
		{name: "leaf keys out of order",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				leaf := f.elems(b, f.branch)[1].child
				e := f.elems(b, leaf)
				b[e[1].keyAt+4] = '0' - 1 // sorts before e[0]
				return b
			},
			shallow: ok, deep: corrupt("out of order")},
		{name: "leaf key at or above its parent's next key",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				leaf := f.elems(b, f.branch)[0].child
				e := f.elems(b, leaf)
				b[e[len(e)-1].keyAt+4] = '9' // still last on its page
				return b
			},
			shallow: ok, deep: corrupt("not below the next key")},
		{name: "overflow count past the high water mark",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				binary.NativeEndian.PutUint32(f.page(b, f.overflow)[hdrOverflow:], uint32(f.hwm))
				return b
			},
			shallow: ok, deep: corrupt("overflow pages run past")},
		{name: "inline bucket page typed as branch",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				e := f.elemNamed(t, b, f.nestedRoot, "inline-bucket")
				at := e.keyAt + len(e.key) + bucketHeaderSize + hdrFlags
				binary.NativeEndian.PutUint16(b[at:], 0x01)
				return b
			},
			shallow: ok, deep: corrupt(`inline bucket "inline-bucket": branch page`)},
		{name: "inline bucket elements past its value",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				e := f.elemNamed(t, b, f.nestedRoot, "inline-bucket")
				at := e.keyAt + len(e.key) + bucketHeaderSize + hdrCount
				binary.NativeEndian.PutUint16(b[at:], 40)
				return b
			},
			shallow: ok, deep: corrupt("elements need")},
		{name: "bucket value shorter than a bucket header",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				e := f.elemNamed(t, b, f.nestedRoot, "paged")
				binary.NativeEndian.PutUint32(b[e.off+12:], 10)
				return b
			},
			shallow: ok, deep: corrupt("shorter than a bucket header")},
		{name: "nested bucket root beyond the high water mark",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				e := f.elemNamed(t, b, f.nestedRoot, "paged")
				ne64.PutUint64(b[e.keyAt+len(e.key):], uint64(f.hwm+3))
				return b
			},
			shallow: ok, deep: corrupt(`bucket "paged": root page`)},
		{name: "nested bucket root is a meta page",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				e := f.elemNamed(t, b, f.nestedRoot, "paged")
				ne64.PutUint64(b[e.keyAt+len(e.key):], 1)
				return b
			},
			shallow: ok, deep: corrupt(`bucket "paged": root is meta page 1`)},
		{name: "nested bucket root is the freelist",
			mutate: func(t *testing.T, f *fixture, b []byte) []byte {
				e := f.elemNamed(t, b, f.nestedRoot, "paged")
				ne64.PutUint64(b[e.keyAt+len(e.key):], uint64(f.freelist))
				return b
			},
			shallow: ok, deep: corrupt("referenced more than once")},
	}
}

// rootPage returns the root bucket's page of the meta bbolt uses.
func (f *fixture) rootPage(b []byte) int {
	c, _ := f.chosenMeta(b)
	return int(ne64.Uint64(b[c*f.pageSize+metaOff+metaRootOff:]))
}

func TestCheckCorruptions(t *testing.T) {
	fx := newFixture(t, fixtureOptions{})
	if fx.freelist < 0 || len(fx.freed) < 2 || fx.overflow < 0 || len(fx.branches) == 0 {
		t.Fatalf("fixture lacks a shape the cases need: %+v", fx)
	}
	for _, tc := range append(validateCases(), pageCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, fx.path)
			f := *fx
			f.path = path
			edit(t, path, func(b []byte) []byte { return tc.mutate(t, &f, b) })
			ctx := context.Background()
			checkWant(t, Check(ctx, path, Options{SkipTreeWalk: true}), tc.shallow)
			err := Check(ctx, path, Options{})
			checkWant(t, err, tc.deep)
			if err == nil {
				if err := readAllWithBolt(path); err != nil {
					t.Fatalf("Check accepted the file, but bbolt: %v", err)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckFileKinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.IntN(256))
	}
	tests := []struct {
		name string
		path string
		want want
	}{
		{"empty file is a new database", write("empty", nil), ok},
		{"one byte", write("one", []byte{0}), notBolt("no bbolt meta page")},
		{"text", write("text", []byte(strings.Repeat("not a database\n", 1000))), notBolt("no bbolt meta page")},
		{"random bytes", write("random", random), notBolt("no bbolt meta page")},
		{"directory", dir, notBolt("not a regular file")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, deep := range []bool{false, true} {
				checkWant(t, Check(context.Background(), tc.path, Options{SkipTreeWalk: !deep}), tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		err := Check(context.Background(), filepath.Join(dir, "absent"), Options{SkipTreeWalk: true})
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("Check = %v, want fs.ErrNotExist and not ErrCorrupt", err)
		}
	})
}

// TestCheckLayouts checks sound files of other shapes are accepted, and
// that a file without a persisted freelist is always walked in full.
func TestCheckLayouts(t *testing.T) {
	tests := []struct {
		name string
		opts fixtureOptions
	}{
		{"page size 1024", fixtureOptions{pageSize: 1024}},
		{"page size 65536", fixtureOptions{pageSize: 65536}},
		{"freelist not persisted", fixtureOptions{noFreelistSync: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			for _, deep := range []bool{false, true} {
				if err := Check(context.Background(), f.path, Options{SkipTreeWalk: !deep}); err != nil {
					t.Fatalf("Check(Deep=%v) = %v", deep, err)
				}
			}
			if err := readAllWithBolt(copyFile(t, f.path)); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("freelist not persisted forces the deep walk", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{noFreelistSync: true})
		if f.freelist != -1 {
			t.Fatalf("fixture persisted its freelist at page %d", f.freelist)
		}
		edit(t, f.path, func(b []byte) []byte {
			leaf := f.elems(b, f.branch)[1].child
			binary.NativeEndian.PutUint32(f.elem(b, leaf, 0)[8:], 0)
			return b
		})
		checkWant(t, Check(context.Background(), f.path, Options{SkipTreeWalk: true}), corrupt("empty key"))
	})
}

// cancelAfter is a context whose Err reports Canceled from the n+1th call
// on, to end a walk part-way through.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestCheckContext(t *testing.T) {
	f := newFixture(t, fixtureOptions{pageSize: 1024})
	if f.hwm < 2*ctxCheckEvery {
		t.Fatalf("fixture has %d pages, too few to reach a context check", f.hwm)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	midWalk := &cancelAfter{Context: context.Background()}
	midWalk.n.Store(1) // the check on entry passes, the first one in the walk fails
	tests := []struct {
		name string
		ctx  context.Context
		opts Options
	}{
		{"cancelled before a shallow check", cancelled, Options{SkipTreeWalk: true}},
		{"cancelled before a deep check", cancelled, Options{}},
		{"cancelled during the walk", midWalk, Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.ctx, f.path, tc.opts)
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want context.Canceled", err)
			}
		})
	}
}

func TestCorruptionErrorFields(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	edit(t, f.path, func(b []byte) []byte {
		ne64.PutUint64(f.elem(b, f.branch, 2)[8:], uint64(f.hwm))
		return b
	})
	err := Check(context.Background(), f.path, Options{})
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("Check = %v, want a *CorruptionError", err)
	}
	if ce.Path != f.path || ce.Page != int64(f.branch) || !strings.Contains(ce.Reason, "branch element 2") {
		t.Fatalf("CorruptionError = %+v, want path %s, page %d, branch element 2", ce, f.path, f.branch)
	}
}

// TestNoValidMetaNamesBoth checks that the error of a file whose two meta
// pages are torn says why each failed, meta 1 read where it is, whatever
// the page size: not at the operating system's page size, which is inside
// meta page 0 for a file of larger pages.
func TestNoValidMetaNamesBoth(t *testing.T) {
	for _, ps := range []int{1024, 4096, 16384, 65536} {
		t.Run(fmt.Sprintf("page size %d", ps), func(t *testing.T) {
			f := newFixture(t, fixtureOptions{pageSize: ps})
			edit(t, f.path, func(b []byte) []byte {
				b[metaOff+metaRootOff] ^= 0xFF
				b[ps+metaOff+metaRootOff] ^= 0xFF
				return b
			})
			err := Check(context.Background(), f.path, Options{SkipTreeWalk: true})
			checkWant(t, err, corrupt(fmt.Sprintf("meta 0: checksum mismatch; meta 1 (at %d): checksum mismatch", ps)))
		})
	}
}

// TestNoValidMetaZeroedMeta1 checks that the error of a file whose meta 0
// is torn and whose meta 1 is zeroed (no magic to find it by) describes
// meta 1 after the page size meta 0 records, not at the operating
// system's page size.
func TestNoValidMetaZeroedMeta1(t *testing.T) {
	for _, ps := range []int{512, 1024, 4096, 16384, 65536} {
		t.Run(fmt.Sprintf("page size %d", ps), func(t *testing.T) {
			f := newFixture(t, fixtureOptions{pageSize: ps})
			edit(t, f.path, func(b []byte) []byte {
				b[metaOff+metaRootOff] ^= 0xFF
				clear(b[ps : 2*ps])
				return b
			})
			err := Check(context.Background(), f.path, Options{SkipTreeWalk: true})
			checkWant(t, err, corrupt(fmt.Sprintf("meta 0: checksum mismatch; meta 1 (at %d): bad magic 0x00000000", ps)))
		})
	}
}
