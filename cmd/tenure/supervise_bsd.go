//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// childProcAttr puts the command in a process group of its own, so that a
// lost lease stops everything it started. Unlike on Linux, the command
// survives a tenure that is killed with SIGKILL.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitCommand waits for the command started by cmd to exit and then kills
// with SIGKILL what it left running in its process group. The command is
// reaped first (there is no portable wait that leaves it unreaped): a
// group's id is not reused while the group has a member, and a group left
// empty makes the kill fail with ESRCH, unless its id went to a new
// group leader within that instant, which pid allocation makes unlikely.
func waitCommand(cmd *exec.Cmd) {
	_ = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
