//go:build !linux

package e2e

import "syscall"

// childSysProcAttr: without Pdeathsig, the test's cleanups kill children.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
