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

// Backup writes a consistent copy of the whole file to w and returns the
// number of bytes written. It runs in one read transaction, so writes go on
// meanwhile and the copy is the file as of the backup's start; the copy is
// a valid warmcache file that Open accepts. Cancelling ctx stops it between
// writes.
//
// A long backup holds bbolt's read lock on the file's mapping: a write that
// has to grow the file waits for it to finish.
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

// Authorizer decides whether an HTTP request may download the cache file
// from DB.BackupHandler. Package backupauth has two: one that checks a
// Kubernetes bearer token with the apiserver (TokenReview, then
// SubjectAccessReview), one that compares a static token.
//
// Implementations are called concurrently, for GET and HEAD requests only.
type Authorizer interface {
	// Authorize returns the name of the request's caller, which the
	// handler logs with each download, or an error:
	//   - one wrapping ErrUnauthenticated when the request carries no
	//     credential or one that is not valid: the handler answers 401
	//     with a WWW-Authenticate challenge;
	//   - one wrapping ErrForbidden when the caller is known but may not
	//     read the file: 403;
	//   - any other when no decision could be made (the apiserver is
	//     unreachable): 500, and the error is logged.
	// The message of an ErrUnauthenticated or ErrForbidden error is sent
	// to the caller, so it must say why without holding the credential;
	// no error may hold the credential.
	Authorize(r *http.Request) (caller string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(r *http.Request) (caller string, err error)

// Authorize calls f(r).
func (f AuthorizerFunc) Authorize(r *http.Request) (string, error) { return f(r) }

// BackupHandlerOptions configures DB.BackupHandler. Exactly one of
// Authorizer and UnsafeNoAuthorization must be set.
type BackupHandlerOptions struct {
	// Authorizer decides who may download the file. Required unless
	// UnsafeNoAuthorization is set.
	Authorizer Authorizer

	// UnsafeNoAuthorization serves the file, every cached object
	// included (Secrets too), to every request that reaches the handler.
	// Set it only where the network alone keeps strangers out (a port
	// bound to 127.0.0.1 in a pod, reached by kubectl port-forward).
	// BackupHandler logs a warning when it is set. Default false.
	UnsafeNoAuthorization bool
}

// bearerRealm is the realm of the handler's WWW-Authenticate challenge.
const bearerRealm = "warmcache backup"

// BackupHandler returns an http.Handler that streams Backup for GET (and
// answers HEAD with the headers only): Content-Type
// application/octet-stream, Content-Length the size of the copy, and a
// Content-Disposition naming it after the file. Other methods get 405. The
// copy stops when the request's context ends. The bytes are the file's as
// they are on disk: an encrypted file is served encrypted.
//
// Each GET or HEAD is first given to opts.Authorizer: a request it does not
// authenticate gets 401 with "WWW-Authenticate: Bearer", one it refuses
// 403, and one it cannot decide 500; nothing of the file is sent then. Each
// download is logged with its caller. A bearer token sent over plain HTTP
// can be read by anyone on the path: serve the handler over HTTPS, or on
// loopback only.
//
// It returns an error wrapping ErrInvalidOptions when neither or both of
// opts.Authorizer and opts.UnsafeNoAuthorization are set.
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
