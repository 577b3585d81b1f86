//go:build linux

package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeNamespace creates namespace ns owned by pid, as Setup records it.
func makeNamespace(t *testing.T, ns string, pid int, start uint64) {
	t.Helper()
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ownerPath(ns), fmt.Appendf(nil, "%d %d\n", pid, start), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run("ip", "netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeNamespace(ns, nil) })
}

func TestSweep(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	prefix := testPrefix()

	// A process that has exited is a dead owner.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	makeNamespace(t, prefix+"-dead", gone.Process.Pid, 1)
	stray := exec.Command("ip", "netns", "exec", prefix+"-dead", "sleep", "60")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	self, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	makeNamespace(t, prefix+"-live", os.Getpid(), self)
	// Same pid, other start time: the pid was reused, the owner is gone.
	makeNamespace(t, prefix+"-reused", os.Getpid(), self+1)

	removed, err := Sweep(prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 2 {
		t.Errorf("Sweep removed %d namespaces, want 2", removed)
	}
	wantKilled(t, stray, "process in the swept namespace")
	list := namespaces(t)
	for ns, want := range map[string]bool{prefix + "-dead": false, prefix + "-reused": false, prefix + "-live": true} {
		if has := strings.Contains(list, ns); has != want {
			t.Errorf("namespace %s listed: %v, want %v", ns, has, want)
		}
		if _, err := os.Stat(filepath.Join(ownerDir, ns+".owner")); (err == nil) != want {
			t.Errorf("owner file of %s exists: %v, want %v", ns, err == nil, want)
		}
	}
	if _, err := Sweep("", nil); err == nil {
		t.Error("Sweep with an empty prefix succeeded")
	}
}
