// Package fsync holds the one directory flush the cache file and the
// snapshot CLI both need after a rename or removal.
package fsync

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Dir flushes directory dir, so that a rename, creation or removal in it
// survives a restart of the machine. File systems that cannot flush a
// directory (EINVAL) make it succeed: there is nothing more to do on them.
func Dir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if errors.Is(serr, syscall.EINVAL) {
		serr = nil
	}
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
