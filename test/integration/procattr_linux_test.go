package integration

import "syscall"

// childProcAttr makes the kernel kill a server when the test process dies
// without running its cleanups (a panic, or go test's -timeout).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
