package hostload

import (
	"fmt"
	"io"
	"os"
)

// Warm flushes the file at path to disk, so that no writeback of it runs
// during a measurement, and reads it through once, so that the page cache
// holds it (as far as memory allows).
func Warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("flush %s: %w", path, err)
	}
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
