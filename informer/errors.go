package informer

import "errors"

// Errors of this package. They are wrapped with the operation and, where
// there is one, the key or the store's own error; test with errors.Is.
var (
	// ErrInvalidOptions is returned by New for options that
	// cannot work (no store, a negative size, a nil index function).
	ErrInvalidOptions = errors.New("informer: invalid options")
	// ErrStarted is returned by methods that must be called before Run
	// (SetTransform, SetWatchErrorHandler) once it has started. Its text
	// is client-go's.
	ErrStarted = errors.New("informer has already started")
	// ErrStopped is matched by the errors of AddEventHandler and
	// AddIndexers once the informer has stopped, which are worded as
	// client-go's ("... because it has stopped already").
	ErrStopped = errors.New("informer has stopped already")
	// ErrInvalidRegistration is returned by RemoveEventHandler for a handle
	// that was not returned by this package.
	ErrInvalidRegistration = errors.New("informer: invalid registration")
	// ErrStoreWrite wraps a failed write to the store (Apply, a relist's
	// Add or Commit): disk full, read-only file, closed store. The informer
	// keeps retrying with backoff and reports the error through Err until
	// a write succeeds; nothing is dropped.
	ErrStoreWrite = errors.New("informer: store write failed")
)

// stoppedError is a call refused by a stopped informer: its text is
// client-go's for that call, and it matches ErrStopped.
type stoppedError struct{ msg string }

func (e *stoppedError) Error() string { return e.msg }
func (e *stoppedError) Unwrap() error { return ErrStopped }
