package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"

	bbolt "go.etcd.io/bbolt"
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
		n, err = tx.WriteTo(ctxWriter{ctx: ctx, w: w})
		return err
	})
	if err != nil {
		return n, fmt.Errorf("bolt: backup %s: %w", db.path, err)
	}
	return n, nil
}

// ctxWriter fails writes once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
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

// bearerRealm is the realm of the handler's WWW-Authenticate challenge.
const bearerRealm = "warmcache backup"

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
	return &backupHandler{db: db, auth: opts.Authorizer}, nil
}

// backupHandler is DB.BackupHandler's handler; auth is nil with
// UnsafeNoAuthorization.
type backupHandler struct {
	db   *DB
	auth Authorizer
}

func (h *backupHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	db := h.db
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD")
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	caller, ok := h.authorize(rw, r)
	if !ok {
		return
	}
	started := false
	var n int64
	err := db.view("backup", func(tx *bbolt.Tx) error {
		hdr := rw.Header()
		hdr.Set("Content-Type", "application/octet-stream")
		hdr.Set("Content-Length", strconv.FormatInt(tx.Size(), 10))
		hdr.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", filepath.Base(db.path)))
		rw.WriteHeader(http.StatusOK)
		started = true
		if r.Method == http.MethodHead {
			return nil
		}
		db.logger.Info("Serving a backup of the cache file", "caller", caller, "remote", r.RemoteAddr, "bytes", tx.Size())
		var err error
		n, err = tx.WriteTo(ctxWriter{ctx: r.Context(), w: rw})
		return err
	})
	switch {
	case err == nil:
	case started:
		// The status is sent: the client sees a short body.
		if !errors.Is(err, r.Context().Err()) {
			db.logger.Error(err, "Backup download failed", "caller", caller, "remote", r.RemoteAddr, "sent", n)
		}
	case errors.Is(err, ErrClosed):
		http.Error(rw, "cache file is closed", http.StatusServiceUnavailable)
	default:
		db.logger.Error(err, "Backup download failed", "caller", caller, "remote", r.RemoteAddr)
		http.Error(rw, "backup failed", http.StatusInternalServerError)
	}
}

// authorize asks the Authorizer about r and, when it does not allow it,
// answers the request and returns false.
func (h *backupHandler) authorize(rw http.ResponseWriter, r *http.Request) (string, bool) {
	if h.auth == nil {
		return "anyone (no authorization)", true
	}
	caller, err := h.auth.Authorize(r)
	switch {
	case err == nil:
		return caller, true
	case errors.Is(err, ErrUnauthenticated):
		h.db.logger.V(1).Info("Backup request refused: not authenticated", "remote", r.RemoteAddr, "reason", err.Error())
		rw.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", bearerRealm))
		http.Error(rw, err.Error(), http.StatusUnauthorized)
	case errors.Is(err, ErrForbidden):
		h.db.logger.V(1).Info("Backup request refused: not authorized", "remote", r.RemoteAddr, "reason", err.Error())
		http.Error(rw, err.Error(), http.StatusForbidden)
	case r.Context().Err() != nil:
		// The caller went away during the check: nobody to answer.
	default:
		h.db.logger.Error(err, "Backup request refused: the authorization check failed", "remote", r.RemoteAddr)
		http.Error(rw, "the authorization check failed", http.StatusInternalServerError)
	}
	return "", false
}
