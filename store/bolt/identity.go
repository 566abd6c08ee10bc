package bolt

import (
	"fmt"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Identity names what a resource's data is a cache of: the resource, and
// the scope of the list/watch that filled it. Two identities that differ in
// any field never share data (invariant 3): a shard or selector change
// starts from an empty resource instead of reusing another scope's objects.
//
// Identity is a plain value; the zero value is invalid (Version and
// Resource are required).
type Identity struct {
	// Group is the API group ("" for the core group).
	Group string `msgpack:"group"`
	// Version is the API version, for example "v1". Required.
	Version string `msgpack:"version"`
	// Resource is the plural resource name, for example "pods". Required.
	Resource string `msgpack:"resource"`
	// Kind is the object kind, for example "Pod".
	Kind string `msgpack:"kind"`
	// Namespace restricts the list/watch to one namespace; "" is all.
	Namespace string `msgpack:"namespace"`
	// LabelSelector is the list/watch label selector, in the syntax of
	// labels.Parse. It is canonicalised (requirements sorted), so
	// equivalent spellings share data.
	LabelSelector string `msgpack:"labelSelector"`
	// FieldSelector is the list/watch field selector, in the syntax of
	// fields.ParseSelector. It is compared as written (after trimming
	// spaces).
	FieldSelector string `msgpack:"fieldSelector"`
	// Shard names the shard of a sharded list/watch (for example a
	// KEP-5866 shard selector or an application-defined shard name).
	Shard string `msgpack:"shard"`
}

// canonical validates id and returns it with its selectors canonicalised.
func (id Identity) canonical() (Identity, error) {
	if id.Version == "" || id.Resource == "" {
		return Identity{}, fmt.Errorf("%w: identity %+v: Version and Resource are required", ErrInvalidOptions, id)
	}
	sc, err := store.Scope{Namespace: id.Namespace, LabelSelector: id.LabelSelector, FieldSelector: id.FieldSelector, Shard: id.Shard}.Canonical()
	if err != nil {
		return Identity{}, fmt.Errorf("%w: identity: %w", ErrInvalidOptions, err)
	}
	id.LabelSelector, id.FieldSelector = sc.LabelSelector, sc.FieldSelector
	return id, nil
}

// String returns the identity's canonical string, which is also the name of
// its bucket in the file: every field, escaped, in a fixed order, so that
// distinct identities have distinct strings. Call it on a validated
// identity (as returned by Store.Identity); it does not canonicalise
// selectors.
func (id Identity) String() string { return layout.BucketName(layout.Identity(id)) }
