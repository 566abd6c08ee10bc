package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// The corrupt-file suite: a real warmcache file, damaged in every way we
// can think of. Open must reject each damaged file with an error matching
// the right sentinel, or, where the damage leaves the file legitimately
// readable, open it and pass Verify. Above all the process must survive:
// the variants run in this process, and again in a child process so that a
// fatal fault (SIGBUS, SIGSEGV, a panic in one of bbolt's goroutines) shows
// as a failed subtest with the child's output instead of killing the test
// binary.
//
// Every variant runs in both modes of Open. With Options.CheckAtOpen, Open
// itself rejects every damaged file. By default, Open checks in a time
// independent of the file's size and the rest is walked in the background:
// a damaged file Open accepts must then be detected by that walk (and by
// nothing slower), every object a reader is handed before the verdict must
// be one that was stored (the warm-start replay's scan, what reaches a
// handler), the resource is marked incomplete, and the next Open refuses
// the file with ErrCorrupt, so that the caller moves it aside.

// corruptExpect is what opening a variant must do.
type corruptExpect string

const (
	// corruptExpectCorrupt: Open fails with ErrCorrupt, not
	// ErrUnsupportedVersion.
	corruptExpectCorrupt corruptExpect = "corrupt"
	// corruptExpectUnsupported: Open fails with a *VersionError matching
	// ErrUnsupportedVersion and ErrCorrupt.
	corruptExpectUnsupported corruptExpect = "unsupported"
	// corruptExpectClean: Open, Resource and Verify succeed, Verify with no
	// problem.
	corruptExpectClean corruptExpect = "clean"
	// corruptExpectReadable: Open, Resource and Verify succeed; Verify may
	// report problems (damaged payloads, which bbolt cannot know about).
	corruptExpectReadable corruptExpect = "readable"
	// corruptExpectInvalid: Open fails with ErrInvalidOptions, not
	// ErrCorrupt, which a caller would answer by moving the path aside (a
	// directory given for the file is the user's).
	corruptExpectInvalid corruptExpect = "invalid"
	// corruptExpectDetected: Open succeeds and the damage, inside a value
	// or key bbolt reads as valid, is caught by a checksum (see
	// checkDetected): the resource is discarded on open, or Verify names
	// the record and reads skip it.
	corruptExpectDetected corruptExpect = "detected"
)

// corruptVariant is one damaged file.
type corruptVariant struct {
	Name   string        `json:"name"`
	File   string        `json:"file"`
	Expect corruptExpect `json:"expect"`
	Dir    bool          `json:"dir,omitempty"` // the path is a directory
	// Part and Key name the record a corruptExpectDetected variant
	// damaged (a layout.Part*, the object key).
	Part string `json:"part,omitempty"`
	Key  string `json:"key,omitempty"`
	data []byte
}

var (
	corruptPodsID    = Identity{Version: "v1", Resource: "pods", Kind: "Pod"}
	corruptPodsCodec = codec.Protobuf(nil)
)

func corruptResourceOptions() ResourceOptions {
	return ResourceOptions{
		Identity: corruptPodsID,
		Codec:    corruptPodsCodec,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	}
}

// buildCorruptBase writes a warmcache file through Open, Resource and
// Apply: pods in several batches, some of them large enough to span
// overflow pages, then some deleted so that the file has free pages.
func buildCorruptBase(t *testing.T, opts Options) []byte {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(uncheckedDir(t), "base.db")
	opts.Logger = ktesting.NewLogger(t, ktesting.NewConfig())
	db, err := Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Resource(ctx, corruptResourceOptions())
	if err != nil {
		t.Fatal(err)
	}
	const pods, batch = corruptBasePods, 40
	for start := 0; start < pods; start += batch {
		txns := make([]cache.Transaction, 0, batch)
		for i := start; i < start+batch; i++ {
			txns = append(txns, cache.Transaction{Type: cache.TransactionTypeAdd, Object: corruptBasePod(i)})
		}
		if err := s.Apply(ctx, txns, ""); err != nil {
			t.Fatal(err)
		}
	}
	var deletes []cache.Transaction
	for i := 0; i < pods; i += 4 {
		deletes = append(deletes, cache.Transaction{Type: cache.TransactionTypeDelete, Object: podgen.Pod(i)})
	}
	if err := s.Apply(ctx, deletes, fmt.Sprint(pods+1)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corruptLayout is where bbolt put things in the base file, as bbolt's
// public API reports them.
type corruptLayout struct {
	pageSize int
	hwm      int // pages in use: [0, hwm)
	txid     int
	inUse    []int               // first pages of branch and leaf pages
	nodes    map[int]corruptNode // the pages of inUse
	free     []int               // pages on the freelist
	values   []int               // overflow pages of leaf pages holding value bytes only
	freelist int
}

func corruptLayoutOf(t *testing.T, data []byte) corruptLayout {
	t.Helper()
	path := filepath.Join(uncheckedDir(t), "layout.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	l := corruptLayout{pageSize: db.Info().PageSize, freelist: -1, nodes: map[int]corruptNode{}}
	err = db.View(func(tx *bbolt.Tx) error {
		l.hwm, l.txid = int(tx.Size())/l.pageSize, tx.ID()
		for id := 2; id < l.hwm; {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			switch info.Type {
			case "free":
				l.free = append(l.free, id)
				id++
				continue
			case "freelist":
				l.freelist = id
			case "branch":
				l.inUse = append(l.inUse, id)
				l.nodes[id] = corruptNode{id: id, kind: info.Type, count: info.Count}
			case "leaf":
				l.inUse = append(l.inUse, id)
				l.nodes[id] = corruptNode{id: id, kind: info.Type, count: info.Count}
				l.values = append(l.values, corruptValueOnlyPages(data, l.pageSize, id, info.Count, info.OverflowCount)...)
			default:
				return fmt.Errorf("page %d: unexpected type %s", id, info.Type)
			}
			id += 1 + info.OverflowCount
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.inUse) < 12 || len(l.free) < 2 || len(l.values) < 1 {
		t.Fatalf("base file lacks a shape the variants need: %d pages in use, %d free, %d of values only, freelist %d",
			len(l.inUse), len(l.free), len(l.values), l.freelist)
	}
	return l
}

// corruptValueOnlyPages returns the overflow pages of leaf page id that
// hold neither its element table nor a key nor a nested bucket: value bytes
// only. A leaf element is flags, pos, ksize, vsize (uint32 each), pos
// counted from the element itself.
func corruptValueOnlyPages(data []byte, pageSize, id, count, overflow int) []int {
	ne := binary.NativeEndian
	structural := make([]bool, overflow+1) // per page of the span
	mark := func(from, to int) {           // byte offsets within the span
		for p := from / pageSize; p <= (to-1)/pageSize && p <= overflow; p++ {
			structural[p] = true
		}
	}
	mark(0, 16+16*count)
	for i := range count {
		e := id*pageSize + 16 + 16*i
		flags, pos, ksize := ne.Uint32(data[e:]), int(ne.Uint32(data[e+4:])), int(ne.Uint32(data[e+8:]))
		from := 16 + 16*i + pos
		to := from + ksize
		if flags != 0 { // a nested bucket: its value is structural too
			to += int(ne.Uint32(data[e+12:]))
		}
		mark(from, to)
	}
	var pages []int
	for p := 1; p <= overflow; p++ {
		if !structural[p] {
			pages = append(pages, id+p)
		}
	}
	return pages
}

// corruptNode is a branch or leaf page in use.
type corruptNode struct {
	id    int
	kind  string // "branch" or "leaf"
	count int    // elements
}

// corruptStructuralFrom reports whether the first page of node, in data,
// holds structural bytes (its element table, a key, a nested bucket) at
// byte off of the page or after it.
func corruptStructuralFrom(data []byte, pageSize int, node corruptNode, off int) bool {
	ne := binary.NativeEndian
	if 16+16*node.count > off {
		return true
	}
	for i := range node.count {
		e := node.id*pageSize + 16 + 16*i
		from, to := 0, 0
		if node.kind == "branch" { // pos, ksize (uint32), pgid (uint64)
			from = 16 + 16*i + int(ne.Uint32(data[e:]))
			to = from + int(ne.Uint32(data[e+4:]))
		} else { // flags, pos, ksize, vsize (uint32)
			from = 16 + 16*i + int(ne.Uint32(data[e+4:]))
			to = from + int(ne.Uint32(data[e+8:]))
			if ne.Uint32(data[e:]) != 0 { // a nested bucket
				to += int(ne.Uint32(data[e+12:]))
			}
		}
		if from < pageSize && to > off {
			return true
		}
	}
	return false
}

// corruptSector is the sector size of the disks a torn page write is
// imagined on: a page larger than it may reach the disk in part.
const corruptSector = 4096

// corruptCounts sizes the randomly placed variants of one base file.
type corruptCounts struct{ truncations, garbage int }

// structuralVariants damages the bbolt structure of base: truncations,
// garbage pages, meta pages. Names start with prefix.
func structuralVariants(t *testing.T, prefix string, base []byte, n corruptCounts, rng *rand.Rand) []corruptVariant {
	t.Helper()
	l := corruptLayoutOf(t, base)
	var vs []corruptVariant
	add := func(name string, expect corruptExpect, data []byte) {
		vs = append(vs, corruptVariant{Name: prefix + name, Expect: expect, data: data})
	}
	// withPage returns base with page id overwritten by random bytes.
	withPage := func(id int) []byte {
		b := slices.Clone(base)
		copy(b[id*l.pageSize:(id+1)*l.pageSize], corruptRandomBytes(rng, l.pageSize))
		return b
	}
	used := l.hwm * l.pageSize

	// Truncated below the high water mark: bbolt would map pages past the
	// end of the file and fault (SIGBUS) reading them.
	for i := range n.truncations {
		off := 1 + rng.IntN(used-1)
		add(fmt.Sprintf("truncated %02d at byte %d", i, off), corruptExpectCorrupt, base[:off])
	}
	add("truncated to the meta pages", corruptExpectCorrupt, base[:2*l.pageSize])
	if len(base) > used {
		// bbolt grows its file ahead of use: cutting what is not in use
		// loses nothing.
		add("truncated at the high water mark", corruptExpectClean, base[:used])
	}

	if l.pageSize > corruptSector {
		// A page write torn on a disk of 4 KiB sectors: a page in use
		// whose first sector alone was written, the rest of the page left
		// as it was before, zeroes when the file grew for it. Pages whose
		// keys, element table or nested buckets reach past the sector:
		// one branch page and two leaf pages.
		branches, leaves := 0, 0
		for _, id := range l.inUse {
			node := l.nodes[id]
			if (node.kind == "branch" && branches == 1) || (node.kind == "leaf" && leaves == 2) ||
				!corruptStructuralFrom(base, l.pageSize, node, corruptSector) {
				continue
			}
			if node.kind == "branch" {
				branches++
			} else {
				leaves++
			}
			b := slices.Clone(base)
			clear(b[id*l.pageSize+corruptSector : (id+1)*l.pageSize])
			add(fmt.Sprintf("%s page %d in use torn: its first %d bytes alone written", node.kind, id, corruptSector), corruptExpectCorrupt, b)
		}
		if leaves == 0 {
			t.Fatalf("base file of %d-byte pages has no leaf page in use with a key past its first %d bytes", l.pageSize, corruptSector)
		}
		// The file cut at a sector boundary inside its last page in use.
		add(fmt.Sprintf("truncated %d bytes into the last page in use", corruptSector), corruptExpectCorrupt, base[:used-l.pageSize+corruptSector])
	}

	// Garbage over pages in use: found by the walk before bbolt reads it.
	perm := rng.Perm(len(l.inUse))
	for i := range n.garbage {
		id := l.inUse[perm[i]]
		add(fmt.Sprintf("garbage over page %d in use", id), corruptExpectCorrupt, withPage(id))
	}
	if l.freelist >= 0 {
		add("garbage over the freelist page", corruptExpectCorrupt, withPage(l.freelist))
	}
	// Garbage over free pages is harmless: nothing reads them.
	for _, id := range l.free[:2] {
		add(fmt.Sprintf("garbage over free page %d", id), corruptExpectClean, withPage(id))
	}
	// Garbage inside a value is not structural: bbolt reads it as bytes,
	// the codec rejects it, Verify reports it.
	id := l.values[rng.IntN(len(l.values))]
	add(fmt.Sprintf("garbage over page %d holding value bytes", id), corruptExpectReadable, withPage(id))

	// Meta pages. The meta bbolt uses is on page txid%2.
	zeroed := func(from, to int) []byte {
		b := slices.Clone(base)
		clear(b[from:to])
		return b
	}
	// A zeroed meta page is rejected although bbolt could read the file
	// through the other meta: bbolt's Tx.Check asserts both meta page
	// headers in a goroutine of its own and would crash the process.
	add("meta page 0 zeroed", corruptExpectCorrupt, zeroed(0, l.pageSize))
	add("meta page 1 zeroed", corruptExpectCorrupt, zeroed(l.pageSize, 2*l.pageSize))
	add("both meta pages zeroed", corruptExpectCorrupt, zeroed(0, 2*l.pageSize))
	// A torn meta write (checksum mismatch, header intact): bbolt falls
	// back to the other meta, the previous transaction's consistent state.
	const metaPgid = 16 + 40 // page header, then meta.pgid
	torn := func(page int) []byte {
		b := slices.Clone(base)
		b[page*l.pageSize+metaPgid] ^= 0xFF
		return b
	}
	add("meta in use torn", corruptExpectClean, torn(l.txid%2))
	add("previous meta torn", corruptExpectClean, torn(1-l.txid%2))
	return vs
}

// foreignVariants are files that are not (this version's) warmcache files:
// not bbolt at all, another program's bbolt file, other format markers.
func foreignVariants(t *testing.T, base []byte, rng *rand.Rand) []corruptVariant {
	t.Helper()
	vs := []corruptVariant{
		{Name: "empty file (a new file)", Expect: corruptExpectClean, data: nil},
		{Name: "text file", Expect: corruptExpectCorrupt, data: []byte("this is not a cache file\n")},
		{Name: "random bytes", Expect: corruptExpectCorrupt, data: corruptRandomBytes(rng, 64<<10)},
		{Name: "one byte", Expect: corruptExpectCorrupt, data: []byte{0x42}},
		{Name: "directory instead of a file", Expect: corruptExpectInvalid, Dir: true},
		{Name: "bbolt file of another program", Expect: corruptExpectCorrupt, data: corruptForeignBolt(t)},
	}
	marker := func(name string, expect corruptExpect, f *layout.FileFormat) {
		v := []byte{0xc1} // never used by msgpack: unreadable
		if f != nil {
			var err error
			if v, err = msgpack.Marshal(f); err != nil {
				t.Fatal(err)
			}
		}
		vs = append(vs, corruptVariant{Name: name, Expect: expect, data: corruptRewriteMarker(t, base, v)})
	}
	marker("format version newer than supported", corruptExpectUnsupported, &layout.FileFormat{Magic: layout.Magic, Version: layout.FormatVersion + 1})
	marker("format version older than any (0)", corruptExpectCorrupt, &layout.FileFormat{Magic: layout.Magic, Version: 0})
	marker("format marker of another program", corruptExpectCorrupt, &layout.FileFormat{Magic: "someone-else", Version: layout.FormatVersion})
	marker("format marker unreadable", corruptExpectCorrupt, nil)
	return vs
}

func corruptRandomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// corruptVariants derives the damaged files from base files written with
// the default sync policy (no persisted freelist: the file check walks the tree
// as bbolt does on open), with SyncFull (a persisted freelist page) and
// with 4 KiB pages.
func corruptVariants(t *testing.T) []corruptVariant {
	t.Helper()
	rng := rand.New(rand.NewPCG(20260101, 42))
	base := buildCorruptBase(t, Options{})
	vs := structuralVariants(t, "", base, corruptCounts{truncations: 24, garbage: 12}, rng)
	vs = append(vs, structuralVariants(t, "SyncFull: ", buildCorruptBase(t, Options{Sync: SyncFull}), corruptCounts{truncations: 4, garbage: 4}, rng)...)
	vs = append(vs, foreignVariants(t, base, rng)...)
	vs = append(vs, checksumVariants(t, base)...)
	// A file created with the 4 KiB pages of bbolt's own default, before
	// DefaultPageSize: files of earlier versions still have them.
	vs = append(vs, structuralVariants(t, "4 KiB pages: ", buildCorruptBase(t, Options{PageSize: 4096}), corruptCounts{truncations: 4, garbage: 4}, rng)...)
	for i := range vs {
		vs[i].File = fmt.Sprintf("variant-%02d.db", i)
	}
	return vs
}

// corruptForeignBolt returns a plain bbolt file with another program's
// buckets.
func corruptForeignBolt(t *testing.T) []byte {
	t.Helper()
	return corruptRawBolt(t, nil, func(tx *bbolt.Tx) error {
		for _, name := range []string{"users", "sessions"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			if err := b.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
}

// corruptRewriteMarker returns base with its format marker replaced by
// value, written with raw bbolt.
func corruptRewriteMarker(t *testing.T, base, value []byte) []byte {
	t.Helper()
	return corruptRawBolt(t, base, func(tx *bbolt.Tx) error {
		b := tx.Bucket(layout.MarkerBucket)
		if b == nil {
			return errors.New("base file has no format marker")
		}
		return b.Put(layout.FormatKey, value)
	})
}

// corruptRawBolt applies fn to a copy of data (a new file if nil) with raw
// bbolt and returns the result.
func corruptRawBolt(t *testing.T, data []byte, fn func(*bbolt.Tx) error) []byte {
	t.Helper()
	path := filepath.Join(uncheckedDir(t), "raw.db")
	if data != nil {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corruptMaterialize writes the variants into dir and returns the path of
// their manifest.
func corruptMaterialize(t *testing.T, vs []corruptVariant, dir string) string {
	t.Helper()
	for _, v := range vs {
		path := filepath.Join(dir, v.File)
		var err error
		if v.Dir {
			err = os.Mkdir(path, 0o700)
		} else {
			err = os.WriteFile(path, v.data, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	manifest, err := json.Marshal(vs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkCorruptVariant opens the variant at path, with Options.CheckAtOpen
// set to atOpen, and checks the outcome. It runs in the test process and
// in the child; problems Verify reports on a corruptExpectReadable variant
// are passed to note.
func checkCorruptVariant(ctx context.Context, v corruptVariant, path string, logger klog.Logger, note func(Problem), atOpen bool) (err error) {
	db, err := Open(ctx, path, Options{Logger: logger, CheckAtOpen: atOpen})
	if v.Expect == corruptExpectInvalid {
		if err == nil {
			_ = db.Close()
			return errors.New("Open succeeded, want ErrInvalidOptions")
		}
		if !errors.Is(err, ErrInvalidOptions) || errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("Open = %v, want ErrInvalidOptions, not ErrCorrupt", err)
		}
		return nil
	}
	if v.Expect == corruptExpectCorrupt || v.Expect == corruptExpectUnsupported {
		if err == nil && !atOpen && v.Expect == corruptExpectCorrupt {
			return checkDetectedInBackground(ctx, db, path, logger)
		}
		if err == nil {
			_ = db.Close()
			return fmt.Errorf("Open succeeded, want an error (%s)", v.Expect)
		}
		var ve *VersionError
		switch {
		case !errors.Is(err, ErrCorrupt):
			return fmt.Errorf("Open = %v, want ErrCorrupt", err)
		case v.Expect == corruptExpectCorrupt && errors.Is(err, ErrUnsupportedVersion):
			return fmt.Errorf("Open = %v, want ErrCorrupt, not ErrUnsupportedVersion", err)
		case v.Expect == corruptExpectUnsupported && !errors.Is(err, ErrUnsupportedVersion):
			return fmt.Errorf("Open = %v, want ErrUnsupportedVersion", err)
		case v.Expect == corruptExpectUnsupported && (!errors.As(err, &ve) || ve.Found != layout.FormatVersion+1 || ve.Supported != layout.FormatVersion):
			return fmt.Errorf("Open = %v, want a *VersionError for version %d", err, layout.FormatVersion+1)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("Open = %v, want success", err)
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	if v.Expect == corruptExpectDetected {
		return checkDetected(ctx, v, db)
	}
	s, err := db.Resource(ctx, corruptResourceOptions())
	if err != nil {
		return fmt.Errorf("Resource: %w", err)
	}
	if _, err := s.State(); err != nil {
		return fmt.Errorf("State: %w", err)
	}
	_ = s.List()
	// The write path too: allocation from the free pages, rebalancing.
	add := []cache.Transaction{{Type: cache.TransactionTypeAdd, Object: podgen.Pod(100000)}}
	if err := s.Apply(ctx, add, ""); err != nil {
		return fmt.Errorf("Apply: %w", err)
	}
	var problems []Problem
	if err := verifyDB(ctx, db, nil, func(p Problem) { problems = append(problems, p) }); err != nil {
		return fmt.Errorf("Verify: %w", err)
	}
	if v.Expect == corruptExpectClean && len(problems) > 0 {
		return fmt.Errorf("Verify found %d problem(s), want none; first: %v", len(problems), problems[0])
	}
	for _, p := range problems {
		note(p)
	}
	// The structure is sound: the walk of every page agrees.
	res, err := db.WaitFileCheck(ctx)
	switch {
	case err != nil:
		return err
	case !res.Done || res.Err != nil || res.Corrupt != nil:
		return fmt.Errorf("file check = %+v, want done and sound", res)
	case atOpen && !res.AtOpen:
		return fmt.Errorf("file check = %+v, want AtOpen with Options.CheckAtOpen", res)
	}
	return nil
}

// checkDetectedInBackground checks a damaged file that Open accepted
// without walking it: see the top of this file.
func checkDetectedInBackground(ctx context.Context, db *DB, path string, logger klog.Logger) (err error) {
	defer func() {
		if db != nil {
			err = errors.Join(err, db.Close())
		}
	}()
	if res := db.FileCheck(); res.AtOpen {
		return fmt.Errorf("file check = %+v: Open walked every page and accepted a damaged file", res)
	}
	corruptFoundInBackground.Add(1)
	s, rerr := db.Resource(ctx, corruptResourceOptions())
	if rerr != nil && !errors.Is(rerr, ErrCorrupt) {
		return fmt.Errorf("Resource = %v, want success or ErrCorrupt", rerr)
	}
	if rerr == nil {
		// What a warm start hands its handlers: every object must be one
		// that was stored; the scan may stop with ErrCorrupt.
		serr := s.ScanParallel(ctx, 2, func(key string, obj interface{}) error { return corruptGenuine(key, obj) })
		if serr != nil && !errors.Is(serr, ErrCorrupt) {
			return fmt.Errorf("ScanParallel: %w", serr)
		}
	}
	res, err := db.WaitFileCheck(ctx)
	switch {
	case err != nil:
		return err
	case !res.Done || !errors.Is(res.Err, ErrCorrupt):
		return fmt.Errorf("file check = %+v, want its walk to find the damage (ErrCorrupt)", res)
	case !errors.Is(res.Corrupt, ErrCorrupt):
		return fmt.Errorf("file check = %+v, want the file reported corrupt", res)
	}
	db.bg.Wait() // the resources are marked incomplete
	if rerr == nil {
		st, err := s.State()
		if err != nil {
			return fmt.Errorf("State: %w", err)
		}
		if st.Complete {
			return fmt.Errorf("State = %+v after the file was found corrupt, want incomplete", st)
		}
	}
	cerr := db.Close()
	db = nil
	if cerr != nil {
		return fmt.Errorf("Close: %w", cerr)
	}
	// The next start refuses the file, and its caller moves it aside.
	again, err := Open(ctx, path, Options{Logger: logger})
	if err == nil {
		_ = again.Close()
		return errors.New("Open after the file was found corrupt succeeded, want ErrCorrupt")
	}
	if !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("Open after the file was found corrupt = %v, want ErrCorrupt", err)
	}
	return nil
}

// corruptFoundInBackground counts the variants Open accepted and the
// background check found damaged.
var corruptFoundInBackground atomic.Int64

// corruptGenuine checks that obj, handed out under key, is the pod
// buildCorruptBase stored under that key.
func corruptGenuine(key string, obj interface{}) error {
	got, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("%q: handed out a %T, want a *v1.Pod", key, obj)
	}
	want, ok := corruptStored()[key]
	if !ok {
		return fmt.Errorf("%q: handed out an object that was never stored", key)
	}
	if !apiequality.Semantic.DeepEqual(want.ObjectMeta, got.ObjectMeta) || !apiequality.Semantic.DeepEqual(want.Spec, got.Spec) ||
		!apiequality.Semantic.DeepEqual(want.Status, got.Status) {
		return fmt.Errorf("%q: handed out an object that differs from the stored one", key)
	}
	return nil
}

// corruptStored returns the pods buildCorruptBase leaves in the file, by
// key.
var corruptStored = sync.OnceValue(func() map[string]*corev1.Pod {
	m := map[string]*corev1.Pod{}
	for i := range corruptBasePods {
		if i%4 == 0 {
			continue // deleted
		}
		pod := corruptBasePod(i)
		m[pod.Namespace+"/"+pod.Name] = pod
	}
	return m
})

// corruptBasePods is the number of pods buildCorruptBase writes.
const corruptBasePods = 240

// corruptBasePod is pod i as buildCorruptBase writes it.
func corruptBasePod(i int) *corev1.Pod {
	pod := podgen.Pod(i)
	if i%40 == 1 {
		pod.Annotations["example.com/large"] = strings.Repeat("large annotation ", 1500)
	}
	return pod
}

// corruptManifestEnv names the manifest the child process checks;
// corruptAtOpenEnv is "true" for Options.CheckAtOpen.
const (
	corruptManifestEnv = "WARMCACHE_BOLT_CORRUPT_MANIFEST"
	corruptAtOpenEnv   = "WARMCACHE_BOLT_CORRUPT_AT_OPEN"
)

func init() {
	childRoles["corrupt-variants"] = runCorruptChild
}

// runCorruptChild is the child role: open every variant of the manifest in
// this process. A fatal fault kills it, and the parent reports that.
func runCorruptChild() error {
	manifest := os.Getenv(corruptManifestEnv)
	b, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	var vs []corruptVariant
	if err := json.Unmarshal(b, &vs); err != nil {
		return err
	}
	var errs []error
	for _, v := range vs {
		path := filepath.Join(filepath.Dir(manifest), v.File)
		atOpen := os.Getenv(corruptAtOpenEnv) == "true"
		if err := checkCorruptVariant(context.Background(), v, path, klog.Background(), func(Problem) {}, atOpen); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

func TestCorruptFiles(t *testing.T) {
	vs := corruptVariants(t)
	if len(vs) < 50 {
		t.Fatalf("%d variants, want at least 50", len(vs))
	}
	for _, mode := range []struct {
		name   string
		atOpen bool
	}{{"check at open", true}, {"background check", false}} {
		t.Run(mode.name, func(t *testing.T) {
			childManifest := corruptMaterialize(t, vs, uncheckedDir(t))
			dir := uncheckedDir(t)
			corruptMaterialize(t, vs, dir)

			t.Run("in process", func(t *testing.T) {
				before := corruptFoundInBackground.Load()
				defer func() {
					// The garbage over pages in use passes Open's checks,
					// which read no page of the data.
					if n := corruptFoundInBackground.Load() - before; !mode.atOpen && n < 12 {
						t.Errorf("%d variants found damaged by the background check, want at least 12", n)
					}
				}()
				for _, v := range vs {
					t.Run(v.Name, func(t *testing.T) {
						logger := ktesting.NewLogger(t, ktesting.NewConfig())
						note := func(p Problem) { t.Logf("Verify: %v", p) }
						if err := checkCorruptVariant(t.Context(), v, filepath.Join(dir, v.File), logger, note, mode.atOpen); err != nil {
							t.Fatal(err)
						}
					})
				}
			})

			t.Run("child process", func(t *testing.T) {
				cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), childEnv+"=corrupt-variants", corruptManifestEnv+"="+childManifest,
					fmt.Sprintf("%s=%t", corruptAtOpenEnv, mode.atOpen))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("child process checking %d variants: %v\n%s", len(vs), err, out)
				}
			})
		})
	}
}
