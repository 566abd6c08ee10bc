//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package kubebin

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// lockFile is not implemented on this platform.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	return nil, fmt.Errorf("%w: %s: %w", ErrLock, path, errors.ErrUnsupported)
}

// setProcessGroup leaves cmd as it is on this platform.
func setProcessGroup(cmd *exec.Cmd) {}
