package main

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// childProcAttr puts the command in a process group of its own, so that a
// lost lease stops everything it started, and has the kernel kill it with
// SIGKILL if tenure itself dies: nothing renews the lease then, and the
// next holder may start TTL later.
//
// The parent-death signal reaches the command only, not the processes it
// started: after a SIGKILL of tenure they keep running, without the lease.
// Making tenure a child subreaper (PR_SET_CHILD_SUBREAPER) would not help
// there: a killed tenure acts on nothing. Nor does tenure need it while it
// runs: signals to the process group reach the command's descendants
// whoever their parent is, and waitCommand kills them before the
// command's process, which holds the group's id, is reaped.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitCommand waits for the command started by cmd to exit, kills with
// SIGKILL what it left running in its process group, and then reaps it.
// The command's process is killed only once it has exited, and still
// unreaped, so the group's id cannot have been reused by then.
func waitCommand(cmd *exec.Cmd) {
	if waitExited(cmd.Process.Pid) == nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = cmd.Wait()
}

// waitExited blocks until the child pid has exited, leaving it to be
// reaped (waitid with WNOWAIT).
func waitExited(pid int) error {
	const pPID = 1      // P_PID of <sys/wait.h>
	var info [16]uint64 // siginfo_t (128 bytes); not read
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return errno
	}
}
