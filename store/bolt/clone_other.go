//go:build !linux

package bolt

import (
	"errors"
	"os"
)

// cloneFile reports that reflinks are not tried on this platform: the
// caller copies.
func cloneFile(dst, src *os.File) error { return errors.ErrUnsupported }
