package testenv

import "syscall"

// sysProcAttr puts a child in its own process group and has the kernel
// SIGKILL it when the test process dies. Pdeathsig follows the thread that
// started the child; Go keeps that thread alive unless a goroutine exits
// while locked to it (runtime.LockOSThread without Unlock).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func checkPlatform() error { return nil }
