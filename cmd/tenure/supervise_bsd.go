//go:build unix && !linux

package main

import "syscall"

// childProcAttr puts the command in a process group of its own, so that a
// lost lease stops everything it started. Unlike on Linux, the command
// survives a tenure that is killed with SIGKILL.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
