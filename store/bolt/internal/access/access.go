// Package access is what package inspect reads a file through beyond
// package bolt's API. Package bolt's DB.Access returns it, given a Token:
// a value only the packages of store/bolt can make (this package is
// internal to them), so that every caller of DB.Access imports this
// package, which the import rules check.
package access

import (
	"context"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/verify"
	"github.com/warmcache/warmcache/store/codec"
)

// Token is DB.Access's argument. Its blank field keeps other packages
// from making one.
type Token struct{ _ struct{} }

// DB is what package inspect uses of a package bolt DB. Store and Identity
// are bolt's types, which this package cannot import.
type DB[Store, Identity any] interface {
	// View runs fn in a read transaction of the file, with bolt's error
	// classification and its recovery from bbolt's panics and the
	// mapping's faults.
	View(op string, fn func(*bbolt.Tx) error) error
	// Bolt returns the bbolt handle of the file, or an error wrapping
	// bolt.ErrClosed.
	Bolt() (*bbolt.DB, error)
	// Known returns the codec and index functions of the stores open on
	// the DB, by bucket name.
	Known() map[string]verify.Known
	// OpenRecorded opens the recorded resource id read-only with codec c
	// (see inspect.OpenRecorded).
	OpenRecorded(ctx context.Context, id Identity, c codec.Codec) (Store, error)
}
