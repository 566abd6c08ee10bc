//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package kubebin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// lockPollInterval is how often a waiting caller retries the build lock.
const lockPollInterval = 250 * time.Millisecond

// lockFile takes an exclusive flock on path, waiting until it is free or ctx
// is done. The returned func releases it. flock locks belong to the open file
// description, so two callers in one process exclude each other too.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrLock, path, err)
	}
	var lockErr error
	err = wait.PollUntilContextCancel(ctx, lockPollInterval, true, func(context.Context) (bool, error) {
		switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
			return false, nil
		default:
			lockErr = err
			return false, err
		}
	})
	if err != nil {
		f.Close()
		if lockErr != nil {
			return nil, fmt.Errorf("%w: flock %s: %w", ErrLock, path, lockErr)
		}
		return nil, fmt.Errorf("kubebin: wait for lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// setProcessGroup runs cmd in its own process group and makes cancellation
// kill the whole group, so the compilers the go tool started stop too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
