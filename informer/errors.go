package informer

import "errors"

// Errors of this package. They are wrapped with the operation and, where
// there is one, the key or the store's own error; test with errors.Is.
var (
	// ErrInvalidOptions is returned by New for options that
	// cannot work (no store, a negative size, a nil index function).
	ErrInvalidOptions = errors.New("informer: invalid options")
	// ErrStarted is returned by methods that must be called before Run
	// (SetTransform, SetWatchErrorHandler) once it has started.
	ErrStarted = errors.New("informer: already started")
	// ErrStopped is returned by AddEventHandler and AddIndexers once the
	// informer has stopped.
	ErrStopped = errors.New("informer: stopped")
	// ErrInvalidRegistration is returned by RemoveEventHandler for a handle
	// that was not returned by this package.
	ErrInvalidRegistration = errors.New("informer: invalid registration")
	// ErrStoreWrite wraps a failed write to the store (Apply, a relist's
	// Add or Commit): disk full, read-only file, closed store. The informer
	// keeps retrying with backoff and reports the error through Err until
	// a write succeeds; nothing is dropped.
	ErrStoreWrite = errors.New("informer: store write failed")
)
