//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// forwardedSignals are the signals lock and elect pass on to the command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// termSignal asks the command to stop.
var termSignal os.Signal = syscall.SIGTERM

// signalGroup sends s to the process group of p (the command and what it
// started), or to p alone when s is not a syscall.Signal.
func signalGroup(p *os.Process, s os.Signal) {
	if sig, ok := s.(syscall.Signal); ok {
		if err := syscall.Kill(-p.Pid, sig); err == nil {
			return
		}
	}
	_ = p.Signal(s)
}

// killGroup sends SIGKILL to the process group of p.
func killGroup(p *os.Process) {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		_ = p.Kill()
	}
}

// exitStatus is the exit status of a finished command, as a shell reports
// it: its exit code, or 128+n when signal n killed it.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return exitError
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalNumber returns the number of s.
func signalNumber(s os.Signal) (int, bool) {
	sig, ok := s.(syscall.Signal)
	return int(sig), ok
}

// processRuns says whether a process with id pid exists (one of another
// user's counts: signal 0 then fails with EPERM, not ESRCH).
func processRuns(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}

// openFileLimit is the process's limit of open files, raised to the hard
// limit first (the Go runtime already does on Linux).
func openFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("read the limit of open files: %w", err)
	}
	if rl.Cur < rl.Max {
		raised := rl
		raised.Cur = rl.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			rl = raised
		}
	}
	return uint64(rl.Cur), nil
}
