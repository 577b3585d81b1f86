package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
)

// devSettings makes s the settings of `tenure server -dev`: one voter
// that bootstraps itself, named "dev" unless -node-id says otherwise;
// runServer puts its data in a new directory in memory (devDataDir) and
// removes it at exit. Its Raft runs on an in-memory transport: it opens no
// Raft port (-raft-addr is ignored), so no forged Raft request can reach
// it, and ACLs need no TLS. It listens on -http-addr and, for workers, on
// -gossip-addr (loopback by default), and admits no other server to Raft.
// A -data-dir, -join or -initial-cluster given with -dev is an error: a
// dev server keeps nothing and joins nobody.
func devSettings(s *serverSettings) error {
	c := &s.cluster
	switch {
	case c.DataDir != "":
		return fmt.Errorf("-dev keeps its state in memory: leave out -data-dir")
	case len(c.Join) > 0 || len(c.InitialCluster) > 0 || c.BootstrapExpect > 0:
		return fmt.Errorf("-dev is one server on its own: leave out -join, -initial-cluster and -bootstrap-expect")
	}
	if host, _ := os.Hostname(); c.NodeID == host || c.NodeID == "" {
		c.NodeID = "dev"
	}
	addr, tr := raft.NewInmemTransport(devRaftAddr)
	c.Transport = tr
	c.InitialCluster = []cluster.Peer{{ID: c.NodeID, RaftAddr: string(addr), HTTPAddr: c.HTTPAddr}}
	c.ProveServer = func(m cluster.Member) error {
		return fmt.Errorf("%w: a -dev server is one server on its own", cluster.ErrNotProven)
	}
	return nil
}

// devRaftAddr is the Raft address of a dev server: the name of its
// in-memory transport, not a network address.
const devRaftAddr = "in-memory"

// devDataDir makes the data dir of a dev server, in memory where the
// machine has a tmpfs at /dev/shm; the caller removes it at exit. A dev
// server killed hard cannot remove its own: each one's name carries its
// process id, and the next dev server removes those whose process is gone.
func devDataDir() (string, error) {
	base := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	sweepDevDataDirs(base)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", devDirPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("-dev: %w", err)
	}
	return dir, nil
}

// devDirPrefix begins the name of every dev server's data dir.
const devDirPrefix = "tenure-dev-"

// sweepDevDataDirs removes the dev data dirs in base whose process (the
// id in the name) no longer runs. A dir whose name holds no process id,
// or whose process runs or cannot be told apart, is left alone.
func sweepDevDataDirs(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), devDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processRuns(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(base, e.Name()))
	}
}
