// Package backup copies a bolt store's file while it is written: to a
// writer (WriteTo), and over HTTP to the callers an authorizer allows
// (Handler), as package bolt's DB.Backup and DB.BackupHandler. The copy is
// a bbolt read transaction's: consistent as of its start, while writes go
// on (one that must grow the file waits for it).
package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store"
)

// The sentinels an authorizer wraps, exported and documented by package
// bolt under the same names.
var (
	ErrUnauthenticated = errors.New("not authenticated")
	ErrForbidden       = errors.New("not authorized")
)

// bearerRealm is the realm of the handler's WWW-Authenticate challenge.
const bearerRealm = "warmcache backup"

// WriteTo writes the file as tx sees it to w and returns the bytes
// written; once ctx is done, the next write fails with ctx's error.
func WriteTo(ctx context.Context, tx *bbolt.Tx, w io.Writer) (int64, error) {
	return tx.WriteTo(ctxWriter{ctx: ctx, w: w})
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

// Handler streams the file for GET (and the headers for HEAD) to the
// requests Authorize allows: 401 with a Bearer challenge for one it does
// not authenticate (an error wrapping ErrUnauthenticated), 403 for one it
// refuses (ErrForbidden), 500 for one it cannot decide (any other error).
// Each download is logged with its caller. A file that View reports closed
// (store.ErrClosed) is 503. Set every field; a Handler is safe for
// concurrent use.
type Handler struct {
	// Path is the file's, whose base name the download is offered as.
	Path string
	// View runs fn in a read transaction of the file and returns its error.
	View func(fn func(*bbolt.Tx) error) error
	// Authorize returns the name of the request's caller, or why it may
	// not download the file; nil serves every request.
	Authorize func(r *http.Request) (caller string, err error)
	Logger    klog.Logger
}

func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
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
	err := h.View(func(tx *bbolt.Tx) error {
		hdr := rw.Header()
		hdr.Set("Content-Type", "application/octet-stream")
		hdr.Set("Content-Length", strconv.FormatInt(tx.Size(), 10))
		hdr.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", filepath.Base(h.Path)))
		rw.WriteHeader(http.StatusOK)
		started = true
		if r.Method == http.MethodHead {
			return nil
		}
		h.Logger.Info("Serving a backup of the cache file", "caller", caller, "remote", r.RemoteAddr, "bytes", tx.Size())
		var err error
		n, err = WriteTo(r.Context(), tx, rw)
		return err
	})
	switch {
	case err == nil:
	case started:
		// The status is sent: the client sees a short body.
		if !errors.Is(err, r.Context().Err()) {
			h.Logger.Error(err, "Backup download failed", "caller", caller, "remote", r.RemoteAddr, "sent", n)
		}
	case errors.Is(err, store.ErrClosed):
		http.Error(rw, "cache file is closed", http.StatusServiceUnavailable)
	default:
		h.Logger.Error(err, "Backup download failed", "caller", caller, "remote", r.RemoteAddr)
		http.Error(rw, "backup failed", http.StatusInternalServerError)
	}
}

// authorize asks Authorize about r and, when it does not allow it, answers
// the request and returns false.
func (h *Handler) authorize(rw http.ResponseWriter, r *http.Request) (string, bool) {
	if h.Authorize == nil {
		return "anyone (no authorization)", true
	}
	caller, err := h.Authorize(r)
	switch {
	case err == nil:
		return caller, true
	case errors.Is(err, ErrUnauthenticated):
		h.Logger.V(1).Info("Backup request refused: not authenticated", "remote", r.RemoteAddr, "reason", err.Error())
		rw.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", bearerRealm))
		http.Error(rw, err.Error(), http.StatusUnauthorized)
	case errors.Is(err, ErrForbidden):
		h.Logger.V(1).Info("Backup request refused: not authorized", "remote", r.RemoteAddr, "reason", err.Error())
		http.Error(rw, err.Error(), http.StatusForbidden)
	case r.Context().Err() != nil:
		// The caller went away during the check: nobody to answer.
	default:
		h.Logger.Error(err, "Backup request refused: the authorization check failed", "remote", r.RemoteAddr)
		http.Error(rw, "the authorization check failed", http.StatusInternalServerError)
	}
	return "", false
}
