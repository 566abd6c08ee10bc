//go:build !unix

package testenv

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func checkPlatform() error {
	return fmt.Errorf("testenv on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
