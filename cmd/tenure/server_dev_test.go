package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A dev server killed hard leaves its data dir behind; the next dev server
// removes the dirs of processes that are gone, and only those.
func TestDevDataDirsOfGoneProcessesAreSwept(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no true(1) to make a process that is gone: %v", err)
	}
	base := t.TempDir()
	dirs := map[string]bool{ // name: whether it should stay
		fmt.Sprintf("%s%d-123", devDirPrefix, gone.Process.Pid): false,
		fmt.Sprintf("%s%d-456", devDirPrefix, os.Getpid()):      true,
		fmt.Sprintf("%s%d-789", devDirPrefix, os.Getppid()):     true,
		devDirPrefix + "notapid-1":                              true,
		"other-dir":                                             true,
	}
	for name := range dirs {
		if err := os.MkdirAll(filepath.Join(base, name, "raft"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepDevDataDirs(base)
	for name, stays := range dirs {
		_, err := os.Stat(filepath.Join(base, name))
		if exists := err == nil; exists != stays {
			t.Errorf("%s: exists %v after the sweep, want %v", name, exists, stays)
		}
	}
}
