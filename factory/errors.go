package factory

import "errors"

// Errors of this package. They are wrapped with the resource and the
// cause; test with errors.Is. A factory that has shut down returns
// informer.ErrStopped.
var (
	// ErrInvalidOptions is returned by New and the informer constructors
	// for options that cannot work (Options.Informer.Store set, a
	// resource without version, an unparsable selector).
	ErrInvalidOptions = errors.New("factory: invalid options")
	// ErrResource is returned for a resource the factory cannot serve:
	// an unknown kind, no client for it, a codec error.
	ErrResource = errors.New("factory: cannot serve resource")
)
