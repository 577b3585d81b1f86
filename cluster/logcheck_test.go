package cluster_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/damage"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// damageKey flips one byte of key's name in an entry of dataDir/raft.db,
// as a failing disk would, and returns the entry's index.
func damageKey(t *testing.T, dataDir, key string) uint64 {
	t.Helper()
	index, _, err := damage.FlipInKey(dataDir, key)
	if err != nil {
		t.Fatal(err)
	}
	return index
}

func soloConfig(dir string) cluster.Config {
	cfg := inproc.Config("n1", dir)
	cfg.InitialCluster = []cluster.Peer{{ID: "n1", RaftAddr: "n1", HTTPAddr: cfg.HTTPAddr}}
	_, cfg.Transport = raft.NewInmemTransport("n1")
	return cfg
}

// startSolo starts a cluster of one server and waits until it leads and
// is ready; it returns the cluster, the server and its data dir.
func startSolo(t *testing.T) (*inproc.Cluster, *cluster.Node, string) {
	t.Helper()
	var dir string
	c := inproc.Start(t, 1, inproc.Options{Tweak: func(cfg *cluster.Config) { dir = cfg.DataDir }})
	n := c.Node(c.Leader())
	harness.WaitUntil(t, 5*time.Second, "the leader to establish", func() bool { return n.Ready() == nil })
	return c, n, dir
}

// assertNamesFileIndexRemedy checks the error a server stops with.
func assertNamesFileIndexRemedy(t *testing.T, err error, dir string, index uint64) {
	t.Helper()
	var le *cluster.LogEntryError
	if !errors.As(err, &le) || !errors.Is(err, fsm.ErrCorrupt) {
		t.Fatalf("error %v: want a *cluster.LogEntryError wrapping fsm.ErrCorrupt", err)
	}
	if le.Index != index {
		t.Errorf("error names entry %d, want %d", le.Index, index)
	}
	msg := err.Error()
	for _, want := range []string{filepath.Join(dir, "raft.db"), "entry " + itoa(index) + " ", "remove-server -force n1", "move the data dir " + dir + " aside", "readmit-server n1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// A server whose raft.db holds a damaged entry refuses to start, naming
// the file, the entry and the remedy, also when the entry lies below its
// last snapshot (never applied again, but sent to a follower if this
// server led).
func TestServerRefusesDamagedLogAtStart(t *testing.T) {
	c, n, dir := startSolo(t)
	if _, _, err := n.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "scene-01", Holder: "tracker-0", TTL: time.Minute}); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if _, err := n.Snapshot(harness.Context(t, 5*time.Second)); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	c.Stop(0)
	index := damageKey(t, dir, "scene-01")

	node, err := cluster.New(soloConfig(dir))
	if err == nil {
		node.Shutdown()
		t.Fatal("a server started on a log with a damaged entry")
	}
	assertNamesFileIndexRemedy(t, err, dir, index)
}

// A server that meets a damaged entry while applying applies nothing of it
// or after it, delivers the error on Failed and shuts down.
func TestServerStopsAtDamagedEntry(t *testing.T) {
	_, n, dir := startSolo(t)

	bad := fsm.Encode(fsm.Acquire{Key: "scene-01", Holder: "intruder", TTL: time.Minute})
	bad[len(bad)/2] ^= 0x01
	f := cluster.RaftOf(n).Apply(bad, 0)
	after := cluster.RaftOf(n).Apply(fsm.Encode(fsm.Acquire{Key: "scene-02", Holder: "intruder", TTL: time.Minute}), 0)
	select {
	case err := <-n.Failed():
		assertNamesFileIndexRemedy(t, err, dir, f.Index())
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop at the damaged entry")
	}
	harness.WaitUntil(t, 10*time.Second, "the server to shut down", func() bool { return n.Status().Role == "shutdown" })
	after.Error()
	m := cluster.MachineOf(n)
	if got := m.Get("scene-01"); got != nil {
		t.Errorf("the damaged entry was applied: %+v", got)
	}
	if got := m.Get("scene-02"); got != nil {
		t.Errorf("an entry after the damaged one was applied: %+v", got)
	}
}
