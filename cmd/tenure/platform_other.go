//go:build !unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// forwardedSignals are the signals lock and elect pass on to the command.
var forwardedSignals = []os.Signal{os.Interrupt}

// termSignal asks the command to stop; without Unix signals it kills it.
var termSignal = os.Kill

func childProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(p *os.Process, s os.Signal) { _ = p.Signal(s) }

func killGroup(p *os.Process) { _ = p.Kill() }

// waitCommand waits for the command to exit; without process groups what
// it started is not stopped.
func waitCommand(cmd *exec.Cmd) { _ = cmd.Wait() }

func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return exitError
	}
	return ps.ExitCode()
}

func signalNumber(s os.Signal) (int, bool) { return 0, false }

// processRuns says whether a process with id pid may exist: here it
// cannot be told, so always.
func processRuns(pid int) bool { return true }

// openFileLimit: no limit of open files to check on this system.
func openFileLimit() (uint64, error) { return ^uint64(0), nil }
