// Package access gives package inspect the unexported abilities of package
// bolt it is built on, without adding them to bolt's public API: bolt
// registers its Hooks when it is initialised, inspect fetches them.
package access

import (
	"context"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/check"
	"github.com/warmcache/warmcache/store/codec"
)

// Hooks are the functions package bolt lends package inspect. DB, Store
// and Identity are bolt's types (type parameters, since this package
// cannot import bolt).
type Hooks[DB, Store, Identity any] struct {
	// View runs fn in a read transaction of db, with bolt's error
	// classification and recovery from bbolt's panics.
	View func(db DB, op string, fn func(*bbolt.Tx) error) error
	// Bolt returns db's bbolt handle, or an error wrapping bolt.ErrClosed.
	Bolt func(db DB) (*bbolt.DB, error)
	// Known returns the codec and index functions of the stores open on
	// db, by bucket name.
	Known func(db DB) map[string]check.Known
	// OpenRecorded opens the recorded resource id of db read-only with
	// codec c (see inspect.OpenRecorded).
	OpenRecorded func(ctx context.Context, db DB, id Identity, c codec.Codec) (Store, error)
	// Classify wraps an error with the sentinel of package bolt that
	// describes it, if any.
	Classify func(error) error
}

var registered any

// Register records the hooks; package bolt calls it from init.
func Register[DB, Store, Identity any](h Hooks[DB, Store, Identity]) { registered = h }

// Get returns the registered hooks. It panics if package bolt did not
// register hooks of these types, which the tests of package inspect catch.
func Get[DB, Store, Identity any]() Hooks[DB, Store, Identity] {
	return registered.(Hooks[DB, Store, Identity])
}
