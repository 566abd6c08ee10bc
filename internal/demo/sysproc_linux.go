package demo

import "syscall"

// childSysProcAttr makes a controller process die with the demo, even if
// the demo is killed.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
