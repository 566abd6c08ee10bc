package e2e

import "syscall"

// childSysProcAttr makes a child die with the test process.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
