//go:build unix && !linux

package testenv

import "syscall"

// sysProcAttr puts a child in its own process group. Outside Linux there is
// no Pdeathsig: children outlive a test process that dies without cleanup.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func checkPlatform() error { return nil }
