package bolt

import (
	"fmt"
	"strings"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// Identity names what a resource's data is a cache of: the resource, and
// the scope of the list/watch that filled it. Identities that differ in
// any field never share data. Version and Resource are required.
type Identity struct {
	// Group is the API group ("" for the core group), Version the API
	// version ("v1"), Resource the plural resource name ("pods"), Kind
	// the object kind ("Pod").
	Group, Version, Resource, Kind string
	// Scope is the list/watch's, recorded in its canonical form
	// (store.Scope.Canonical).
	store.Scope
}

// canonical validates id and returns it with its selectors canonicalised.
func (id Identity) canonical() (Identity, error) {
	if id.Version == "" || id.Resource == "" {
		return Identity{}, fmt.Errorf("%w: identity %+v: Version and Resource are required", ErrInvalidOptions, id)
	}
	sc, err := id.Scope.Canonical()
	if err != nil {
		return Identity{}, fmt.Errorf("%w: identity: %w", ErrInvalidOptions, err)
	}
	id.Scope = sc
	return id, nil
}

// String returns the name of the identity's bucket in the file: every
// field, escaped. It does not canonicalise selectors (Store.Identity
// returns them canonical).
func (id Identity) String() string { return layout.BucketName(id.recorded()) }

// recorded returns id as a resource's meta records it.
func (id Identity) recorded() layout.Identity { return layout.Identity(id) }

// identityOf returns the identity recorded in a resource's meta.
func identityOf(m *layout.Meta) Identity { return Identity(m.Identity) }

// SampleResourceSuffix and SampleKindSuffix end the resource and the kind of
// the identity that holds an informer's sample object rather than objects
// of the cluster ("pods-sample", "Pod sample"): see Identity.Sample.
const (
	SampleResourceSuffix = "-sample"
	SampleKindSuffix     = " sample"
)

// Sample returns the identity of the resource that holds the sample object
// of id's resource.
func (id Identity) Sample() Identity {
	id.Resource += SampleResourceSuffix
	id.Kind += SampleKindSuffix
	return id
}

// IsSample reports whether id is the identity of a resource that holds an
// informer's sample object, not objects of the cluster: tools that list a
// file's resources leave it out.
func (id Identity) IsSample() bool {
	return strings.HasSuffix(id.Kind, SampleKindSuffix) && strings.HasSuffix(id.Resource, SampleResourceSuffix)
}
