package bolt

import (
	"context"
	"fmt"
	"io"
	"net/http"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/backup"
)

// Backup writes a consistent copy of the file, as of its start, to w and
// returns the bytes written; writes go on meanwhile (one that must grow the
// file waits for it). The copy is a file Open accepts. Cancelling ctx stops
// it between writes.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("bolt: backup %s: %w", db.path, err)
	}
	var n int64
	err := db.view("backup", func(tx *bbolt.Tx) error {
		var err error
		n, err = backup.WriteTo(ctx, tx, w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("bolt: backup %s: %w", db.path, err)
	}
	return n, nil
}

// Authorizer decides whether an HTTP request may download the file from
// DB.BackupHandler (package backupauth has two). It is called concurrently,
// for GET and HEAD requests.
type Authorizer interface {
	// Authorize returns the name of the request's caller, which the
	// handler logs, or an error wrapping ErrUnauthenticated (no valid
	// credential: 401), ErrForbidden (403) or another (no decision could
	// be made: 500, logged). The message of the first two is sent to the
	// caller; no error may hold the credential.
	Authorize(r *http.Request) (caller string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(r *http.Request) (caller string, err error)

// Authorize calls f(r).
func (f AuthorizerFunc) Authorize(r *http.Request) (string, error) { return f(r) }

// BackupHandlerOptions configures DB.BackupHandler: exactly one of its
// fields must be set.
type BackupHandlerOptions struct {
	// Authorizer decides who may download the file.
	Authorizer Authorizer
	// UnsafeNoAuthorization serves the file, every cached object (Secrets
	// too) included, to every request that reaches the handler: only
	// where the network alone keeps strangers out (a port on 127.0.0.1
	// reached by kubectl port-forward). It is logged as a warning.
	UnsafeNoAuthorization bool
}

// BackupHandler returns an http.Handler that streams Backup for GET (and
// the headers for HEAD) to the requests opts.Authorizer allows: 401 with a
// Bearer challenge for one it does not authenticate, 403 for one it
// refuses, 500 for one it cannot decide. Each download is logged with its
// caller. The bytes are the file's as they are on disk: serve them over
// HTTPS, or on loopback only. Neither or both options set wraps
// ErrInvalidOptions.
func (db *DB) BackupHandler(opts BackupHandlerOptions) (http.Handler, error) {
	switch {
	case opts.Authorizer == nil && !opts.UnsafeNoAuthorization:
		return nil, fmt.Errorf("bolt: backup handler for %s: %w: no Authorizer (package backupauth has one for Kubernetes tokens and one for a static token); "+
			"set UnsafeNoAuthorization to serve the file to anyone who can reach the handler", db.path, ErrInvalidOptions)
	case opts.Authorizer != nil && opts.UnsafeNoAuthorization:
		return nil, fmt.Errorf("bolt: backup handler for %s: %w: both Authorizer and UnsafeNoAuthorization are set", db.path, ErrInvalidOptions)
	case opts.UnsafeNoAuthorization:
		db.logger.Info("WARNING: the backup handler serves the cache file, every cached object included, to any request that reaches it (BackupHandlerOptions.UnsafeNoAuthorization)")
	}
	h := &backup.Handler{
		Path:   db.path,
		View:   func(fn func(*bbolt.Tx) error) error { return db.view("backup", fn) },
		Logger: db.logger,
	}
	if opts.Authorizer != nil {
		h.Authorize = opts.Authorizer.Authorize
	}
	return h, nil
}
