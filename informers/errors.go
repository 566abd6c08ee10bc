package informers

import "errors"

// Errors of this package, wrapped with the type or resource concerned;
// test with errors.Is. InformerFor cannot return an error (its signature
// is client-go's): it logs them and falls back to client-go's in-memory
// informer (see Factory.Fallbacks). ForResource returns them.
var (
	// ErrUnknownType: the Go type is not a kind of client-go's scheme
	// with a list kind, or the resource is not one of its resources.
	ErrUnknownType = errors.New("informers: type unknown to client-go's scheme")
	// ErrNoTypedClient: the kubernetes.Interface has no typed client for
	// the type (or returned nil for it).
	ErrNoTypedClient = errors.New("informers: no typed client")
	// ErrUnsupportedTweak: the tweak sets list options other than the
	// selectors, Limit and TimeoutSeconds.
	ErrUnsupportedTweak = errors.New("informers: unsupported tweak")
)
