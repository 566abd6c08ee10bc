//go:build !linux

package filelock

import (
	"errors"
	"os"
)

// cloneFile reports that reflinks are not tried on this platform: the
// caller copies.
func cloneFile(dst, src *os.File) error { return errors.ErrUnsupported }
