package seal

import "errors"

// Errors of package seal, wrapped with the operation, key ID or source;
// test with errors.Is.
var (
	// ErrInvalidKey is returned for key material that is not the base64
	// encoding of at least KeySize bytes, or a provider with no key.
	ErrInvalidKey = errors.New("invalid encryption key")
	// ErrUnknownKey is returned when a payload was sealed with a key the
	// codec does not hold (a missing or wrong key): its data cannot be
	// read and must be relisted.
	ErrUnknownKey = errors.New("payload sealed with a key that is not configured")
	// ErrOpen is returned when a payload does not authenticate under its
	// key: it was altered, truncated, or moved to another item, resource
	// or resourceVersion.
	ErrOpen = errors.New("sealed payload does not authenticate")
	// ErrFormat is returned for a payload that is not a sealed payload of
	// a format this binary knows.
	ErrFormat = errors.New("not a sealed payload")
	// ErrUnbound is returned by the plain Encode and Decode of a sealed
	// codec: a sealed payload is always bound to its item (codec.Bound).
	ErrUnbound = errors.New("sealed codec used without its item's additional data")
)
