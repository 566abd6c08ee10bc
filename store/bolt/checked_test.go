package bolt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/bolt/internal/filelock"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/verify"
	"github.com/warmcache/warmcache/store/codec"
)

// Like bbolt's internal/btesting, every bolt file a test of this package
// creates is checked when the test ends: tempPath and checkedDir hand out
// directories whose files are all checked, after the test's own cleanups
// (which close its DBs) and before the directory is removed. The check is
// the snapshot CLI's verify: the file's structure (filecheck, what
// inspect.CheckFile runs) and its content (verify.Tx, what inspect.Verify
// runs) with the codecs resolved by name. A test that damages a file on
// purpose opts out with damagedPath or uncheckedDir.

// Problem, ProblemKind and the kinds are those verify.Tx reports, under the
// names inspect.Verify gives them.
type (
	Problem     = verify.Problem
	ProblemKind = string
)

const (
	ProblemMeta                = verify.Meta
	ProblemLayout              = verify.Layout
	ProblemItem                = verify.Item
	ProblemIndexWithoutItem    = verify.IndexWithoutItem
	ProblemIndexWithoutReverse = verify.IndexWithoutReverse
	ProblemReverseWithoutIndex = verify.ReverseWithoutIndex
	ProblemBlobWithoutItem     = verify.BlobWithoutItem
	ProblemIndexValues         = verify.IndexValues
	ProblemSelectPart          = verify.SelectPart
	ProblemCount               = verify.Count
	ProblemNotDecoded          = verify.NotDecoded
	ProblemChecksum            = verify.Checksum
)

// testCodecs resolves the codec names the tests record: package codec's,
// else testkit.PodJSON under that name.
func testCodecs(name string) (codec.Codec, error) {
	if c, err := codec.ByName(nil, name); err == nil {
		return c, nil
	}
	return testkit.PodJSON{CodecName: name}, nil
}

// verifyDB runs what inspect.Verify runs on db: the content check, with the
// codecs and index functions of the stores open on db and codecs for the
// others (nil: payloads of the others are not decoded).
func verifyDB(ctx context.Context, db *DB, codecs func(string) (codec.Codec, error), report func(Problem)) error {
	opts := verify.Options{Known: db.known(), Codecs: codecs, Report: report}
	return db.view("verify", func(tx *bbolt.Tx) error { return verify.Tx(ctx, tx, opts) })
}

// checkedDir returns a new test directory whose bolt files are checked when
// the test ends.
func checkedDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { checkFiles(t, dir) })
	return dir
}

// uncheckedDir returns a new test directory whose files are not checked:
// for files that are not bolt files, or are damaged on purpose.
func uncheckedDir(t testing.TB) string { return t.TempDir() }

// damagedPath is tempPath for a test that damages its file on purpose: the
// file is not checked when the test ends.
func damagedPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(uncheckedDir(t), "cache.db")
}

// checkFiles checks every file of dir but state files and temporary ones.
func checkFiles(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("check files: %v", err)
		return
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.Type().IsRegular() || strings.HasSuffix(path, layout.StateSuffix) || strings.HasSuffix(path, filelock.Suffix) || strings.HasSuffix(path, ".tmp") {
			continue
		}
		checkFile(t, path)
	}
}

// checkFile fails t on any problem filecheck or verify.Tx finds in the file
// at path, which must not be open for writing.
func checkFile(t testing.TB, path string) {
	t.Helper()
	ctx := context.Background()
	if err := filecheck.Check(ctx, path, filecheck.Options{}); err != nil {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), err)
		return
	}
	db, err := Open(ctx, path, Options{ReadOnly: true, UnsafeIgnoreState: true})
	if err != nil {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), err)
		return
	}
	defer func() { _ = db.Close() }()
	err = verifyDB(ctx, db, testCodecs, func(p Problem) {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), p)
	})
	if err != nil {
		t.Errorf("end-of-test check of %s: %v", filepath.Base(path), err)
	}
}
