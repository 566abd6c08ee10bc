// Package syncstate keeps the state file beside a warmcache file written
// with SyncOnClose (path + layout.StateSuffix), which says whether the
// file's content can be trusted after a crash.
//
// Commits are not flushed, so what protects the file is the kernel: a
// process that dies (SIGKILL, OOM, panic) loses nothing it committed,
// because its writes are in the page cache, but a machine that restarts
// before the page cache reached the disk may leave a torn file. The state
// file is written durably (temporary file, fsync, rename, fsync of the
// directory) at these moments:
//
//   - Open, before the first unflushed commit: Open with the kernel's boot
//     id (/proc/sys/kernel/random/boot_id), which changes at every boot.
//   - Close, after flushing the file: Closed.
//   - a failed flush: Unflushed (see Flusher).
//   - corruption found while the file is open (the background check, a
//     fault or a panic reading it): Corrupt, with the reason, kept by
//     Close.
//
// Trust accepts a file whose state is Closed, or Open with the current
// boot id (the writer died, the kernel did not), or that has no state file
// (its last writer flushed every commit). Any other state means the machine
// restarted while unflushed commits were in flight, or a flush failed: an
// error wrapping ErrUnflushed (which matches ErrCorrupt), and the caller
// moves the file aside and relists, as for any damaged file. The state
// file lives outside the bbolt file on purpose: a torn bbolt file can show
// stale pages, and a stale page must never be able to claim the file was
// closed cleanly.
package syncstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/warmcache/warmcache/internal/fsync"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// States recorded in the state file.
const (
	Open      = "open"
	Closed    = "closed"
	Unflushed = "unflushed"
	Corrupt   = "corrupt"
)

// State is the content of the state file (JSON, so that an operator can
// read it).
type State struct {
	State string    `json:"state"`
	Boot  string    `json:"boot,omitempty"`
	PID   int       `json:"pid,omitempty"`
	Time  time.Time `json:"time"`
	// Reason says why a corrupt file is corrupt.
	Reason string `json:"reason,omitempty"`
}

// BootID returns the kernel's boot id.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errors.New("read boot id: empty")
	}
	return id, nil
}

// Read returns the state recorded beside path; ok is false when there is
// no state file.
func Read(path string) (st State, ok bool, err error) {
	b, err := os.ReadFile(layout.StatePath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read %s: %w", layout.StatePath(path), err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, true, fmt.Errorf("%w: state file %s is unreadable: %w", fileerr.ErrUnflushed, layout.StatePath(path), err)
	}
	return st, true, nil
}

// Trust returns nil when the file at path may be read: see the package
// documentation. boot is the current boot id, "" if unknown.
func Trust(path, boot string) error {
	st, ok, err := Read(path)
	switch {
	case err != nil:
		return err
	case !ok, st.State == Closed:
		return nil
	case st.State == Open && boot != "" && st.Boot == boot:
		return nil
	case st.State == Open && boot == "":
		return fmt.Errorf("%w: written without flushing by process %d since %s and not closed, and the boot id that tells whether the machine restarted since cannot be read: it may be torn",
			fileerr.ErrUnflushed, st.PID, st.Time.Format(time.RFC3339))
	case st.State == Open:
		return fmt.Errorf("%w: written without flushing by process %d since %s and not closed before the machine restarted (boot id %q, now %q): it may be torn",
			fileerr.ErrUnflushed, st.PID, st.Time.Format(time.RFC3339), st.Boot, boot)
	case st.State == Unflushed:
		return fmt.Errorf("%w: flushing it failed at %s", fileerr.ErrUnflushed, st.Time.Format(time.RFC3339))
	case st.State == Corrupt:
		return fmt.Errorf("%w: found corrupt by process %d at %s: %s", store.ErrCorrupt, st.PID, st.Time.Format(time.RFC3339), st.Reason)
	}
	return fmt.Errorf("%w: state file %s records unknown state %q", fileerr.ErrUnflushed, layout.StatePath(path), st.State)
}

// Write records st beside path durably, with the cache file's mode: when
// it returns nil, the state file holds st even if the machine stops the
// next instant.
func Write(path string, st State, mode os.FileMode) error {
	st.PID, st.Time = os.Getpid(), time.Now().UTC()
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	dst := layout.StatePath(path)
	tmp := dst + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("write state file: %w", fileerr.Classify(err))
	}
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write state file %s: %w", tmp, fileerr.Classify(err))
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write state file: %w", fileerr.Classify(err))
	}
	return syncDir(path)
}

// Remove removes the state file beside path, if any, durably.
func Remove(path string) error {
	err := os.Remove(layout.StatePath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove state file: %w", fileerr.Classify(err))
	}
	return syncDir(path)
}

// syncDir flushes the directory of path.
func syncDir(path string) error {
	if err := fsync.Dir(filepath.Dir(path)); err != nil {
		return fileerr.Classify(err)
	}
	return nil
}
