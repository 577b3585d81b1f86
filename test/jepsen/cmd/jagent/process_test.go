//go:build linux

package main

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// The workloads run against real clusters in the fault suite
// (test/jepsen), whose checkers read their histories; this package tests
// them piece by piece, and the process itself here.

// TestStoreProcessStopsOnSIGTERM runs `jagent store` as a process: it
// serves, records, and exits 0 on SIGTERM; without a subcommand jagent
// exits 2.
func TestStoreProcessStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "jagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := exec.Command(bin).Run(); err == nil || err.(*exec.ExitError).ExitCode() != exitUsage {
		t.Fatalf("jagent without a subcommand: %v, want exit status %d", err, exitUsage)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	path := filepath.Join(t.TempDir(), "store.jsonl")
	var stderr harness.Buffer
	cmd := exec.Command(bin, "store", "-listen", addr, "-history", path)
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := newStoreClient("http://"+addr, time.Second)
	var werr error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, werr = sc.write(context.Background(), "k", regWrite{Writer: "a#1", Token: 3, Value: 1}); werr == nil {
			break
		}
	}
	if werr != nil {
		t.Fatalf("the store did not serve: %v\n%s", werr, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("store after SIGTERM: %v, want exit 0; stderr:\n%s", err, stderr.String())
	}
	evs, err := history.ReadFile(path)
	if err != nil || len(evs) != 1 || evs[0].Kind != history.StoreWrite || !evs[0].Accepted {
		t.Fatalf("store history: %+v, %v; want the accepted write", evs, err)
	}
}
