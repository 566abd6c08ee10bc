package bolt

import (
	"context"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
)

// validateFile is called by Open before bbolt maps the file, so that a
// truncated or garbage file is rejected with an error instead of crashing
// the process (bbolt trusts its file: a page past the end of a truncated
// file is a SIGBUS no recover can catch, and a garbage page a panic in one
// of bbolt's goroutines). It returns nil for an empty file (bbolt
// initialises it) and for a file that passes; an error wrapping
// fs.ErrNotExist or fs.ErrPermission is handled as such; any other error
// makes Open fail with ErrCorrupt. It is a variable so that tests can
// replace it.
var validateFile = func(ctx context.Context, path string) error {
	return filecheck.Validate(ctx, path, filecheck.Options{})
}
