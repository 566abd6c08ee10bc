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

// BackupHandler returns an http.Handler that streams Backup for GET (and
// answers HEAD with the headers only): Content-Type
// application/octet-stream, Content-Length the size of the copy, and a
// Content-Disposition naming it after the file. Other methods get 405. The
// copy stops when the request's context ends. Mount it only where the
// cache's content may be read: it holds every cached object.
func (db *DB) BackupHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rw.Header().Set("Allow", "GET, HEAD")
			http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		started := false
		err := db.view("backup", func(tx *bbolt.Tx) error {
			h := rw.Header()
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Length", strconv.FormatInt(tx.Size(), 10))
			h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", filepath.Base(db.path)))
			rw.WriteHeader(http.StatusOK)
			started = true
			if r.Method == http.MethodHead {
				return nil
			}
			_, err := tx.WriteTo(ctxWriter{ctx: r.Context(), w: rw})
			return err
		})
		switch {
		case err == nil:
		case started:
			// The status is sent: the client sees a short body.
			if !errors.Is(err, r.Context().Err()) {
				db.logger.Error(err, "Backup download failed")
			}
		case errors.Is(err, ErrClosed):
			http.Error(rw, "cache file is closed", http.StatusServiceUnavailable)
		default:
			db.logger.Error(err, "Backup download failed")
			http.Error(rw, "backup failed", http.StatusInternalServerError)
		}
	})
}
