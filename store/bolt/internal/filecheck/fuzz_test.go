package filecheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// seedFiles returns small real bbolt files (1 KiB pages) of several shapes:
// empty, one bucket, a multi-level tree with nested, inline and overflow
// buckets and free pages, and one without a persisted freelist.
func seedFiles(f testing.TB) [][]byte {
	type build func(tx *bbolt.Tx) error
	put := func(bucket string, n, size int) build {
		return func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte(bucket))
			if err != nil {
				return err
			}
			for i := range n {
				if err := b.Put(fmt.Appendf(nil, "%s-%04d", bucket, i), make([]byte, size)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	nested := func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("outer"))
		if err != nil {
			return err
		}
		in, err := b.CreateBucketIfNotExists([]byte("inline"))
		if err != nil {
			return err
		}
		if err := in.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		deep, err := b.CreateBucketIfNotExists([]byte("deep"))
		if err != nil {
			return err
		}
		for i := range 40 {
			if err := deep.Put(fmt.Appendf(nil, "d%03d", i), make([]byte, 40)); err != nil {
				return err
			}
		}
		return b.Put([]byte("big"), make([]byte, 3000))
	}
	deleteSome := func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("items"))
		for i := 0; i < 120; i += 3 {
			if err := b.Delete(fmt.Appendf(nil, "items-%04d", i)); err != nil {
				return err
			}
		}
		return nil
	}
	shapes := []struct {
		noFreelistSync bool
		txs            []build
	}{
		{txs: nil},
		{txs: []build{put("items", 3, 10)}},
		{txs: []build{put("items", 120, 30), nested, deleteSome}},
		{noFreelistSync: true, txs: []build{put("items", 120, 30), nested, deleteSome}},
	}
	var out [][]byte
	for i, s := range shapes {
		path := filepath.Join(f.TempDir(), fmt.Sprintf("seed%d.db", i))
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{PageSize: 1024, NoFreelistSync: s.noFreelistSync})
		if err != nil {
			f.Fatal(err)
		}
		for _, tx := range s.txs {
			if err := db.Update(tx); err != nil {
				f.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzCheck feeds arbitrary bytes to Check as a file. Check must
// return nil or an error wrapping ErrCorrupt, never panic or hang; the deep
// check must be at least as strict as the shallow one; and a file the deep
// check accepts must be readable, checkable and writable by bbolt.
func FuzzCheck(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Add([]byte("not a database"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		shallow := Check(ctx, path, Options{SkipTreeWalk: true})
		deep := Check(ctx, path, Options{})
		for _, err := range []error{shallow, deep} {
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want nil or ErrCorrupt", err)
			}
		}
		if deep == nil && shallow != nil {
			t.Fatalf("deep check accepted what the shallow check rejected: %v", shallow)
		}
		if deep != nil {
			return
		}
		if err := readAllWithBolt(path); err != nil {
			t.Fatalf("Check accepted the file, but bbolt: %v", err)
		}
	})
}
