//go:build unix

package main

import (
	"fmt"
	"syscall"
)

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
