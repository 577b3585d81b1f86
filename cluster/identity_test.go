package cluster_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

func TestIdentityUnreadableRefused(t *testing.T) {
	for name, content := range map[string]string{"garbage": "{not json", "no node id": `{"cluster_id":"c-1"}`} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, cluster.IdentityFile), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := cluster.ReadIdentity(dir)
			if !errors.Is(err, cluster.ErrRefusedStart) || !strings.Contains(err.Error(), cluster.IdentityFile) {
				t.Fatalf("ReadIdentity = %v, want ErrRefusedStart naming %s", err, cluster.IdentityFile)
			}
		})
	}
}

// singleNode starts a one-server cluster n1 on dir (in-memory transport).
func singleNode(t *testing.T, dir string, tweak func(*cluster.Config)) (*cluster.Node, error) {
	t.Helper()
	cfg := inproc.Config("n1", dir)
	_, tr := raft.NewInmemTransport("n1")
	cfg.Transport = tr
	cfg.InitialCluster = []cluster.Peer{{ID: "n1", RaftAddr: "n1", HTTPAddr: "127.0.0.1:1"}}
	if tweak != nil {
		tweak(&cfg)
	}
	n, err := cluster.New(cfg)
	if err == nil {
		t.Cleanup(func() { n.Shutdown() })
	}
	return n, err
}

// runOnce runs n1 on dir until its identity file records the cluster id
// the first leader gave, and stops it; it returns the identity.
func runOnce(t *testing.T, dir string) cluster.Identity {
	t.Helper()
	n, err := singleNode(t, dir, nil)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var id cluster.Identity
	harness.WaitUntil(t, 10*time.Second, "the cluster id in the identity file", func() bool {
		id, _, _ = cluster.ReadIdentity(dir)
		return id.ClusterID != "" && id.ClusterID == n.Status().ClusterID
	})
	if id.NodeID != "n1" {
		t.Fatalf("identity file names node %q, want n1", id.NodeID)
	}
	n.Shutdown()
	return id
}

func wantRefused(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, cluster.ErrRefusedStart) {
		t.Fatalf("New = %v, want ErrRefusedStart", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestStartRefusesAnotherServersDataDir(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	_, err := singleNode(t, dir, func(c *cluster.Config) { c.NodeID = "n2" })
	wantRefused(t, err, "belongs to server n1", "not to n2", "-node-id n1")
}

func TestStartRefusesLostRaftState(t *testing.T) {
	dir := t.TempDir()
	id := runOnce(t, dir)
	if err := os.Remove(filepath.Join(dir, "raft.db")); err != nil {
		t.Fatal(err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, id.ClusterID, "remove-server -force n1", "-allow-lost-raft-state")
	// Refused again: a refusal changes nothing in the data dir.
	_, err = singleNode(t, dir, nil)
	wantRefused(t, err, id.ClusterID)

	// The operator's flag starts it as a new server.
	n, err := singleNode(t, dir, func(c *cluster.Config) { c.AllowLostRaftState = true })
	if err != nil {
		t.Fatalf("start with AllowLostRaftState: %v", err)
	}
	n.Shutdown()
}

func TestStartRefusesStateOfAnotherCluster(t *testing.T) {
	dir := t.TempDir()
	id := runOnce(t, dir)
	id.ClusterID = "other-cluster"
	if err := cluster.WriteIdentity(dir, id); err != nil {
		t.Fatal(err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, "other-cluster", "belongs to cluster")
}

func TestStartRefusesZeroedRaftDB(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	path := filepath.Join(dir, "raft.db")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, info.Size()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = singleNode(t, dir, nil)
	wantRefused(t, err, path, "damaged", "remove-server -force n1")
}

// A data dir written by a build without identity files (raft.db, no
// node-identity.json) is claimed at start and keeps working.
func TestStartClaimsDataDirWithoutIdentity(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	if err := os.Remove(filepath.Join(dir, cluster.IdentityFile)); err != nil {
		t.Fatal(err)
	}
	id := runOnce(t, dir)
	b, _ := json.Marshal(id)
	if id.NodeID != "n1" || id.ClusterID == "" {
		t.Fatalf("identity after restart = %s", b)
	}
}

// runWithSnapshot runs n1 on dir as runOnce does, with a snapshot taken
// before it stops; it returns the snapshot's state file.
func runWithSnapshot(t *testing.T, dir string) string {
	t.Helper()
	runOnce(t, dir)
	n, err := singleNode(t, dir, nil)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	harness.WaitUntil(t, 10*time.Second, "a leader", func() bool { return n.Status().Ready })
	if _, err := n.Snapshot(harness.Context(t, 10*time.Second)); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	n.Shutdown()
	states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(states) != 1 {
		t.Fatalf("snapshots: %v, want one", states)
	}
	return states[0]
}

// Snapshots left behind do not hide a lost raft.db: the term and vote are
// in raft.db alone.
func TestStartRefusesLostRaftStateWithSnapshotsLeft(t *testing.T) {
	dir := t.TempDir()
	runWithSnapshot(t, dir)
	if err := os.Remove(filepath.Join(dir, "raft.db")); err != nil {
		t.Fatal(err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, "has been a member of cluster", "-allow-lost-raft-state")
}

func TestStartRefusesDamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	state := runWithSnapshot(t, dir)
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = singleNode(t, dir, nil)
	wantRefused(t, err, filepath.Join(dir, "snapshots")+" is damaged", "remove-server -force n1")
}

// A second server on a data dir in use is refused, naming the lock, rather
// than waiting for ever on it.
func TestStartRefusesDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	if _, err := singleNode(t, dir, nil); err != nil {
		t.Fatalf("first start: %v", err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, "raft.db is locked by another process")
}
