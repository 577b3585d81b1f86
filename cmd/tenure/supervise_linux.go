package main

import "syscall"

// childProcAttr puts the command in a process group of its own, so that a
// lost lease stops everything it started, and has the kernel kill it with
// SIGKILL if tenure itself dies: nothing renews the lease then, and the
// next holder may start TTL later.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
