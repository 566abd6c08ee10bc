package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/apiserver"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// servedCopy is one opened cache file and the API over it: the file
// serve was given, or a copy fetched from a backup URL. Requests hold it
// (acquire, release) while they run; once retired, the last release closes
// the file and removes it if it is a fetched copy. Its watches end when it
// is retired, as an API server's watch may end: clients list again, from
// the copy that replaced it.
type servedCopy struct {
	// file is closed with the copy; resources are what it records.
	file      io.Closer
	resources []inspect.ResourceInfo
	handler   http.Handler
	// remove is the path to remove once the file is closed: a fetched
	// copy's; "" for the file serve was given.
	remove string
	// fetched is when the copy was fetched (zero for a file).
	fetched time.Time
	// retiring is cancelled by retire, to end the copy's watches.
	retiring context.Context
	endWatch context.CancelFunc
	// closed is closed once the file is closed and removed; closeErr is
	// then what closing it returned.
	closed   chan struct{}
	closeErr error

	mu      sync.Mutex // guards refs and retired
	refs    int
	retired bool
}

// newServedCopy returns the copy of f served by h, to remove after use
// when remove is not "".
func newServedCopy(f *snapshotFile, h http.Handler, remove string, fetched time.Time) *servedCopy {
	ctx, cancel := context.WithCancel(context.Background())
	return &servedCopy{file: f, resources: f.resources, handler: h, remove: remove, fetched: fetched,
		retiring: ctx, endWatch: cancel, closed: make(chan struct{})}
}

// acquire holds the copy for a request; it returns false once the copy is
// retired, for the request to take the copy that replaced it.
func (c *servedCopy) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.retired {
		return false
	}
	c.refs++
	return true
}

// release ends a request's hold; the last one of a retired copy closes it.
func (c *servedCopy) release() {
	c.mu.Lock()
	c.refs--
	last := c.retired && c.refs == 0
	c.mu.Unlock()
	if last {
		c.close()
	}
}

// retire ends the copy's watches and closes it once no request holds it.
// It is called once.
func (c *servedCopy) retire() {
	c.endWatch()
	c.mu.Lock()
	c.retired = true
	last := c.refs == 0
	c.mu.Unlock()
	if last {
		c.close()
	}
}

// close closes and removes the file; it runs once, after retire and the
// last release.
func (c *servedCopy) close() {
	c.closeErr = c.file.Close()
	if c.remove != "" {
		if err := os.Remove(c.remove); err != nil && c.closeErr == nil {
			c.closeErr = fmt.Errorf("remove the copy: %w", err)
		}
	}
	close(c.closed)
}

// copySwitch is the handler of serve: it passes each request to the
// current copy, and switches to a newer copy atomically. A request runs
// to its end on the copy it started on (a list, a get), except a watch,
// which ends when its copy is retired.
type copySwitch struct {
	current atomic.Pointer[servedCopy]
}

// swap makes next the current copy (nil: none, the server is stopping)
// and retires the previous one, which it returns.
func (s *copySwitch) swap(next *servedCopy) *servedCopy {
	prev := s.current.Swap(next)
	if prev != nil {
		prev.retire()
	}
	return prev
}

func (s *copySwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A fault reading a damaged memory-mapped file becomes a panic
	// store/bolt turns into an error, as on Run's goroutine, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var c *servedCopy
	for {
		if c = s.current.Load(); c == nil {
			http.Error(w, "the server is stopping", http.StatusServiceUnavailable)
			return
		}
		if c.acquire() {
			break
		}
		// Retired between the load and the hold: the next one is
		// current already.
	}
	defer c.release()
	if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(c.retiring, cancel)
		defer stop()
		r = r.WithContext(ctx)
	}
	c.handler.ServeHTTP(w, r)
}

// openCopy opens the cache file at path and builds the API over it.
// Messages name the file name; notes on its resources are written to
// stderr unless they are the same as the previous copy's.
func (o *serveOptions) openCopy(ctx context.Context, path, name string) (*snapshotFile, http.Handler, error) {
	f, err := openSnapshot(ctx, o.env, path, o.common.open())
	if err != nil {
		return nil, nil, renamed(err, path, name)
	}
	var notes strings.Builder
	resources, err := o.resources(ctx, f, &notes)
	if n := strings.ReplaceAll(notes.String(), path, name); n != o.lastNotes {
		_, _ = io.WriteString(o.stderr, n)
		o.lastNotes = n
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, renamed(err, path, name)
	}
	h, err := apiserver.New(apiserver.Options{Resources: resources, Token: o.token, Now: o.env.Now, Errors: func(err error) {
		fmt.Fprintf(o.stderr, "warning: %v\n", renamed(err, path, name))
	}})
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, h, nil
}

// renamed returns err, its message naming name where it named path.
func renamed(err error, path, name string) error {
	if path == name || !strings.Contains(err.Error(), path) {
		return err
	}
	return &renamedError{err: err, msg: strings.ReplaceAll(err.Error(), path, name)}
}

// renamedError is an error whose message names a temporary copy by what
// it is a copy of; it matches what it wraps.
type renamedError struct {
	err error
	msg string
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// fetchCopy fetches a copy from the backup URL into dir and opens it. The
// first copy draws a progress bar on a terminal.
func (o *serveOptions) fetchCopy(ctx context.Context, client *backupClient, dir string, first bool) (c *servedCopy, err error) {
	tmp, err := os.CreateTemp(dir, "copy-*.db")
	if err != nil {
		return nil, fmt.Errorf("create a file for the copy of %s: %w", o.source.URL, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	unused := "" // refresh says what is served
	if first {
		unused = "nothing is served"
	}
	fetched := o.env.Now()
	if _, err := client.fetch(ctx, o.common, tmp, unused, first); err != nil {
		return nil, err
	}
	f, h, err := o.openCopy(ctx, tmp.Name(), "the copy of "+o.source.URL)
	if err != nil {
		return nil, err
	}
	return newServedCopy(f, h, tmp.Name(), fetched), nil
}

// refresh fetches a new copy every o.Refresh until ctx ends, and switches
// to it. A fetch that fails leaves the last good copy served and says
// why on stderr; the next one is tried at the next tick. Each wait starts
// once the previous fetch is done, so fetches never overlap.
func (o *serveOptions) refresh(ctx context.Context, client *backupClient, dir string, sw *copySwitch) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // as on Run's goroutine
	t := time.NewTimer(o.Refresh)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, err := o.fetchCopy(ctx, client, dir, false)
		switch {
		case ctx.Err() != nil:
			if next != nil {
				next.retire()
			}
			return
		case err != nil:
			// One write, not interleaved with the handlers' warnings.
			var b strings.Builder
			fmt.Fprintf(&b, "warning: refresh of %s failed; still serving the copy fetched at %s: %s\n",
				o.source.URL, sw.current.Load().fetched.Format(time.TimeOnly), err)
			var h *hinted
			for e := err; errors.As(e, &h); e = h.err {
				fmt.Fprintf(&b, "%s\n", h.hint)
			}
			_, _ = io.WriteString(o.stderr, b.String())
			failing = true
		default:
			if failing {
				fmt.Fprintf(o.stderr, "Refreshed %s: serving the copy fetched at %s.\n", o.source.URL, next.fetched.Format(time.TimeOnly))
				failing = false
			}
			o.copies.Add(1)
			go o.reportClose(sw.swap(next))
		}
		t.Reset(o.Refresh)
	}
}

// reportClose waits until a retired copy is closed and says on stderr if
// closing it failed. o.copies counts it.
func (o *serveOptions) reportClose(c *servedCopy) {
	defer o.copies.Done()
	<-c.closed
	if c.closeErr != nil {
		fmt.Fprintf(o.stderr, "warning: close the copy fetched at %s: %v\n", c.fetched.Format(time.TimeOnly), c.closeErr)
	}
}

// lockedWriter serialises the writes of the server's goroutines to w.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
