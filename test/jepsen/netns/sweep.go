//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// ownerDir holds one file per namespace made by Setup, naming the process
// that owns it as "<pid> <start time in clock ticks>".
const ownerDir = "/run/tenure-jepsen"

func ownerPath(ns string) string { return filepath.Join(ownerDir, ns+".owner") }

// writeOwner records this process as the owner of namespace ns. Setup
// calls it before creating ns, so Sweep never sees an ownerless namespace
// of a live run.
func writeOwner(ns string) error {
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return fmt.Errorf("record owner of %s: %w", ns, err)
	}
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return fmt.Errorf("record owner of %s: %w", ns, err)
	}
	data := fmt.Sprintf("%d %d\n", pid, start)
	if err := os.WriteFile(ownerPath(ns), []byte(data), 0o644); err != nil {
		return fmt.Errorf("record owner of %s: %w", ns, err)
	}
	return nil
}

// startTime returns the start time of process pid, field 22 of
// /proc/<pid>/stat, which tells a process from a later one with its pid.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// ownerAlive reports whether the process that owns namespace ns still
// runs. The owner is read from its owner file or, failing that, from the
// digits that follow prefix in the name ("tnj12345-n1"). A namespace with
// neither has no live owner.
func ownerAlive(ns, prefix string) bool {
	var pid int
	var start uint64
	if b, err := os.ReadFile(ownerPath(ns)); err == nil {
		if _, err := fmt.Sscan(string(b), &pid, &start); err != nil {
			pid, start = 0, 0
		}
	}
	if pid == 0 {
		rest := strings.TrimPrefix(ns, prefix)
		end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(rest)
		}
		pid, _ = strconv.Atoi(rest[:end])
	}
	if pid <= 0 {
		return false
	}
	got, err := startTime(pid)
	if err != nil {
		return false
	}
	return start == 0 || got == start
}

// Sweep removes the namespaces whose name starts with prefix and whose
// owner process is gone, left by earlier runs: it kills every process
// inside them with SIGKILL, deletes them and their owner files. It returns
// how many namespaces it removed. Namespaces of live owners, this process
// included, are left alone; a namespace with neither an owner file nor a
// pid after prefix in its name has no owner and is removed.
func Sweep(prefix string, log hclog.Logger) (int, error) {
	if prefix == "" {
		return 0, errors.New("sweep: refusing an empty prefix")
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	var errs []error
	removed := 0
	for _, e := range entries {
		ns := e.Name()
		if !strings.HasPrefix(ns, prefix) || ownerAlive(ns, prefix) {
			continue
		}
		log.Info("sweeping stale namespace", "namespace", ns)
		if err := removeNamespace(ns, log); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	// Owner files whose namespace is already gone.
	files, _ := filepath.Glob(filepath.Join(ownerDir, prefix+"*.owner"))
	for _, f := range files {
		ns := strings.TrimSuffix(filepath.Base(f), ".owner")
		if _, err := os.Lstat(filepath.Join(netnsDir, ns)); err != nil && !ownerAlive(ns, prefix) {
			_ = os.Remove(f)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("sweep: %w", err)
	}
	return removed, nil
}

// removeNamespace kills every process in namespace ns, deletes ns and its
// owner file. A namespace that does not exist is not an error.
func removeNamespace(ns string, log hclog.Logger) error {
	if _, err := os.Lstat(filepath.Join(netnsDir, ns)); errors.Is(err, os.ErrNotExist) {
		return removeOwner(ns)
	}
	if err := killAll(ns, log); err != nil {
		return err
	}
	if _, err := run("ip", "netns", "delete", ns); err != nil {
		return err
	}
	return removeOwner(ns)
}

func removeOwner(ns string) error {
	if err := os.Remove(ownerPath(ns)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove owner file of %s: %w", ns, err)
	}
	return nil
}

// killAll sends SIGKILL to every process in namespace ns and waits up to a
// second for them to leave it.
func killAll(ns string, log hclog.Logger) error {
	self := os.Getpid()
	deadline := time.Now().Add(time.Second)
	for {
		out, err := run("ip", "netns", "pids", ns)
		if err != nil {
			return err
		}
		pids := strings.Fields(out)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in namespace %s after SIGKILL", pids, ns)
		}
		for _, p := range pids {
			pid, err := strconv.Atoi(p)
			if err != nil || pid <= 1 || pid == self {
				continue
			}
			if err := unix.Kill(pid, syscall.SIGKILL); err == nil {
				log.Debug("killed process left in namespace", "namespace", ns, "pid", pid)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
