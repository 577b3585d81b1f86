//go:build !linux

package integration

import "syscall"

// childProcAttr has nothing to add outside Linux: servers are killed by the
// tests' cleanups only.
func childProcAttr() *syscall.SysProcAttr { return nil }
