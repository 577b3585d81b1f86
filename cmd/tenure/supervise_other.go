//go:build !unix

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are the signals lock and elect pass on to the command.
var forwardedSignals = []os.Signal{os.Interrupt}

// termSignal asks the command to stop; without Unix signals it kills it.
var termSignal = os.Kill

func childProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(p *os.Process, s os.Signal) { _ = p.Signal(s) }

func killGroup(p *os.Process) { _ = p.Kill() }

func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return exitError
	}
	return ps.ExitCode()
}

func signalNumber(s os.Signal) (int, bool) { return 0, false }
