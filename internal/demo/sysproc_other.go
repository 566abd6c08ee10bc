//go:build !linux

package demo

import "syscall"

// childSysProcAttr: without Pdeathsig, the demo's deferred Kill ends its
// controller processes.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
