package filecheck_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
)

// Check a file before handing it to bbolt, and move a bad one aside.
func ExampleCheck() {
	dir, err := os.MkdirTemp("", "filecheck-example")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	good := filepath.Join(dir, "good.db")
	db, err := bbolt.Open(good, 0o600, nil)
	if err != nil {
		panic(err)
	}
	_ = db.Close()
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, []byte("not a database"), 0o600); err != nil {
		panic(err)
	}

	for _, path := range []string{good, bad} {
		err := filecheck.Check(context.Background(), path, filecheck.Options{})
		switch {
		case err == nil:
			fmt.Println(filepath.Base(path), "is safe to open")
		case errors.Is(err, filecheck.ErrCorrupt):
			fmt.Println(filepath.Base(path), "moved aside:", errors.Is(err, filecheck.ErrNotBolt))
			_ = os.Rename(path, path+".corrupt")
		}
	}
	// Output:
	// good.db is safe to open
	// bad.db moved aside: true
}
