package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/warmcache/warmcache/internal/fsync"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// checkOutputPath checks, before any work, that out can be written: it is
// given, it is not input (the file a command reads), not a directory, in a
// directory that exists, and absent unless force.
func checkOutputPath(out, input string, force bool) error {
	if out == "" {
		return usageErrorf("--output is required: the file to write")
	}
	dir := filepath.Dir(out)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return mark(ErrNotFound, "directory %s of --output does not exist", dir)
	}
	fi, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check --output %s: %w", out, err)
	case fi.IsDir():
		return usageErrorf("--output %s is a directory; give the path of the file to write", out)
	}
	if input != "" {
		if in, err := os.Stat(input); err == nil && os.SameFile(in, fi) {
			return usageErrorf("--output %s is the input file itself; snapshot never writes the file it reads", out)
		}
	}
	if !force {
		return withHint(mark(ErrExists, "%s exists", out), "Give --force to replace it, or another --output.")
	}
	return nil
}

// tempPath returns an unused path in the directory of out for a file that
// will become out.
func tempPath(out string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("create a temporary file beside %s: %w", out, err)
	}
	name := f.Name()
	_ = f.Close()
	return name, nil
}

// installFile moves the finished file tmp to out and flushes the directory.
// Without force it fails, atomically, when out exists (a hard link never
// replaces a file); with force it replaces out and removes the state file
// the replaced cache file may have had (out.state, see bolt.SyncOnClose),
// which describes the old file, not the copy.
func installFile(tmp, out string, force bool) error {
	if force {
		if err := os.Rename(tmp, out); err != nil {
			return fmt.Errorf("move %s to %s: %w", tmp, out, err)
		}
		if err := os.Remove(inspect.StatePath(out)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the state file of the replaced %s: %w", out, err)
		}
		return fsync.Dir(filepath.Dir(out))
	}
	err := os.Link(tmp, out)
	switch {
	case errors.Is(err, fs.ErrExist):
		return withHint(mark(ErrExists, "%s exists (created meanwhile)", out), "Give --force to replace it, or another --output.")
	case err != nil && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EXDEV)):
		// No hard links on this file system: check, then rename.
		if _, serr := os.Lstat(out); serr == nil {
			return withHint(mark(ErrExists, "%s exists (created meanwhile)", out), "Give --force to replace it, or another --output.")
		}
		if err := os.Rename(tmp, out); err != nil {
			return fmt.Errorf("move %s to %s: %w", tmp, out, err)
		}
	case err != nil:
		return fmt.Errorf("move %s to %s: %w", tmp, out, err)
	default:
		if err := os.Remove(tmp); err != nil {
			return fmt.Errorf("remove %s: %w", tmp, err)
		}
	}
	return fsync.Dir(filepath.Dir(out))
}
