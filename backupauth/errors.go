package backupauth

import "errors"

// ErrInvalidOptions is returned by NewKubernetes and StaticToken for
// options that cannot work; test with errors.Is.
//
// Authorize returns errors wrapping bolt.ErrUnauthenticated (no token, or
// one that is not valid) and bolt.ErrForbidden (a valid token whose user
// may not read the backup); any other error means the apiserver could not
// decide.
var ErrInvalidOptions = errors.New("backupauth: invalid options")
