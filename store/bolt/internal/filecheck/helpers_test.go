package filecheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// fixture describes a bbolt file built by newFixture and where its parts
// landed, as bbolt's public API reports them.
type fixture struct {
	path       string
	pageSize   int
	hwm        int // high water mark in pages (Tx.Size / page size)
	nestedRoot int // root page of bucket "nested" (a leaf with overflow)
	branch     int // a branch page of bucket "items" with at least 4 leaf children
	size       int // file size in bytes
	leaves     []int
	branches   []int
	freelist   int   // -1 when not persisted
	freed      []int // pages on the freelist
	overflow   int   // a leaf page with overflow pages
}

type fixtureOptions struct {
	pageSize       int
	noFreelistSync bool
}

// newFixture writes a bbolt file with a multi-level bucket, nested paged
// and inline buckets, a value spanning overflow pages and free pages, the
// shapes Check has to walk.
func newFixture(t testing.TB, o fixtureOptions) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{PageSize: o.pageSize, NoFreelistSync: o.noFreelistSync})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	rng := rand.New(rand.NewPCG(1, 2))
	value := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	mustUpdate(t, db, func(tx *bbolt.Tx) error {
		items, err := tx.CreateBucket([]byte("items"))
		if err != nil {
			return err
		}
		for i := range 3000 {
			if err := items.Put(fmt.Appendf(nil, "key-%05d", i), value(100)); err != nil {
				return err
			}
		}
		nested, err := tx.CreateBucket([]byte("nested"))
		if err != nil {
			return err
		}
		if err := nested.Put([]byte("big"), value(20000)); err != nil {
			return err
		}
		inline, err := nested.CreateBucket([]byte("inline-bucket"))
		if err != nil {
			return err
		}
		for _, k := range []string{"a", "b", "c"} {
			if err := inline.Put([]byte(k), []byte("v")); err != nil {
				return err
			}
		}
		paged, err := nested.CreateBucket([]byte("paged"))
		if err != nil {
			return err
		}
		for i := range 500 {
			if err := paged.Put(fmt.Appendf(nil, "p-%04d", i), value(50)); err != nil {
				return err
			}
		}
		return nil
	})
	mustUpdate(t, db, func(tx *bbolt.Tx) error {
		items := tx.Bucket([]byte("items"))
		for i := 0; i < 3000; i += 5 {
			if err := items.Delete(fmt.Appendf(nil, "key-%05d", i)); err != nil {
				return err
			}
		}
		return nil
	})

	f := &fixture{path: path, pageSize: db.Info().PageSize, freelist: -1, overflow: -1}
	err = db.View(func(tx *bbolt.Tx) error {
		f.hwm = int(tx.Size()) / f.pageSize
		f.nestedRoot = int(tx.Bucket([]byte("nested")).Root())
		for id := 2; id < f.hwm; id++ {
			info, err := tx.Page(id)
			if err != nil || info == nil {
				return fmt.Errorf("page %d: %v", id, err)
			}
			switch info.Type {
			case "leaf":
				f.leaves = append(f.leaves, id)
				if info.OverflowCount > 0 {
					f.overflow = id
				}
			case "branch":
				f.branches = append(f.branches, id)
			case "freelist":
				f.freelist = id
			case "free":
				f.freed = append(f.freed, id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.size = len(b)
	f.branch = -1
	for _, id := range f.branches {
		if e := f.elems(b, id); len(e) >= 4 && slices.Contains(f.leaves, e[0].child) {
			f.branch = id
			break
		}
	}
	if f.branch < 0 {
		t.Fatal("fixture has no branch page of leaves")
	}
	return f
}

func mustUpdate(t testing.TB, db *bbolt.DB, fn func(*bbolt.Tx) error) {
	t.Helper()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies src to a new file in a fresh temp dir.
func copyFile(t testing.TB, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// edit applies fn to the file's bytes and writes them back.
func edit(t testing.TB, path string, fn func(b []byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Offsets of page header fields and meta fields, as bbolt lays them out.
const (
	hdrID, hdrFlags, hdrCount, hdrOverflow = 0, 8, 10, 12

	metaOff                                   = 16
	metaVersion, metaPageSizeOff, metaRootOff = 4, 8, 16
	metaFreelistOff, metaPgidOff, metaTxidOff = 32, 40, 48
	metaChecksumField                         = 56
)

// setMeta sets a uint field of meta page i and, if resum, recomputes its
// checksum so that only the field's value is wrong.
func (f *fixture) setMeta(b []byte, i, field int, v uint64, width int, resum bool) {
	m := b[i*f.pageSize+metaOff:]
	if width == 4 {
		binary.NativeEndian.PutUint32(m[field:], uint32(v))
	} else {
		binary.NativeEndian.PutUint64(m[field:], v)
	}
	if resum {
		h := fnv.New64a()
		_, _ = h.Write(m[:metaChecksumField])
		binary.NativeEndian.PutUint64(m[metaChecksumField:], h.Sum64())
	}
}

// chosenMeta returns the meta bbolt uses (higher txid) and the other one.
func (f *fixture) chosenMeta(b []byte) (chosen, other int) {
	t0 := binary.NativeEndian.Uint64(b[metaOff+metaTxidOff:])
	t1 := binary.NativeEndian.Uint64(b[f.pageSize+metaOff+metaTxidOff:])
	if t1 > t0 {
		return 1, 0
	}
	return 0, 1
}

func (f *fixture) page(b []byte, id int) []byte {
	return b[id*f.pageSize : (id+1)*f.pageSize]
}

// elem returns the 16-byte element i of page id.
func (f *fixture) elem(b []byte, id, i int) []byte {
	off := id*f.pageSize + 16 + 16*i
	return b[off : off+16]
}

// readAllWithBolt opens path with bbolt read-write, reads every key and
// value of every bucket, runs Tx.Check and writes one transaction. It is
// the oracle for a file Check accepted: none of this may fail or panic.
// (A fatal fault here kills the test binary, which fails the test too.)
func readAllWithBolt(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bbolt panicked: %v", r)
		}
	}()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() { _ = db.Close() }()
	err = db.View(func(tx *bbolt.Tx) error {
		// Drain the channel: Check's goroutine reads the mapping until done.
		var first error
		for cerr := range tx.Check() {
			if first == nil {
				first = fmt.Errorf("tx.Check: %w", cerr)
			}
		}
		if first != nil {
			return first
		}
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return readBucket(b) })
	})
	if err != nil {
		return err
	}
	return db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("oracle-write"))
		if err != nil {
			return err
		}
		return b.Put(bytes.Repeat([]byte("k"), 10), bytes.Repeat([]byte("v"), 5000))
	})
}

func readBucket(b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if child := b.Bucket(k); child != nil {
				return readBucket(child)
			}
		}
		_ = bytes.Clone(v)
		return nil
	})
}

// testElem is one element of a page as the test reads it from raw bytes.
type testElem struct {
	off   int // file offset of the element
	key   []byte
	keyAt int // file offset of the key
	child int // branch elements: the child page
	value []byte
}

// elems decodes the elements of page id (branch or leaf) from raw bytes.
func (f *fixture) elems(b []byte, id int) []testElem {
	ne := binary.NativeEndian
	p := b[id*f.pageSize:]
	flags, count := ne.Uint16(p[hdrFlags:]), int(ne.Uint16(p[hdrCount:]))
	out := make([]testElem, count)
	for i := range out {
		e := 16 + 16*i
		if flags == 0x01 {
			pos, ksize := int(ne.Uint32(p[e:])), int(ne.Uint32(p[e+4:]))
			out[i] = testElem{off: id*f.pageSize + e, key: p[e+pos : e+pos+ksize], keyAt: id*f.pageSize + e + pos, child: int(ne.Uint64(p[e+8:]))}
			continue
		}
		pos, ksize, vsize := int(ne.Uint32(p[e+4:])), int(ne.Uint32(p[e+8:])), int(ne.Uint32(p[e+12:]))
		out[i] = testElem{off: id*f.pageSize + e, key: p[e+pos : e+pos+ksize], keyAt: id*f.pageSize + e + pos, value: p[e+pos+ksize : e+pos+ksize+vsize]}
	}
	return out
}

// elemNamed returns the element of page id whose key is key.
func (f *fixture) elemNamed(t testing.TB, b []byte, id int, key string) testElem {
	t.Helper()
	for _, e := range f.elems(b, id) {
		if string(e.key) == key {
			return e
		}
	}
	t.Fatalf("page %d has no element %q", id, key)
	return testElem{}
}
