package cluster

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/fsm"
)

// Hooks for the tests of package cluster_test, which drive whole clusters
// through test/harness/inproc (a test inside package cluster cannot import
// that package, which imports this one). They read state that no exported
// method shows; being in a _test.go file, they exist in test builds only.

// MachineOf is n's lease state machine.
func MachineOf(n *Node) *fsm.Machine { return n.machine }

// RaftOf is n's Raft.
func RaftOf(n *Node) *raft.Raft { return n.raft }

// VerifyRoundRunning reports whether n's leadership check has a quorum
// round in flight.
func VerifyRoundRunning(n *Node) bool {
	return n.verify.InFlight() > 0
}

// AdmitWorker is the balancer's admission check of worker for group (ACLs
// on).
func AdmitWorker(n *Node, worker, group string) bool { return n.admission()(worker, group) }

// SetFreeKeySweep makes the leader look for free keys to forget every d.
func SetFreeKeySweep(cfg *Config, d time.Duration) { nodeconfig.TestHooks(cfg).FreeKeySweep = d }

// WrapLogStore makes the node wrap its Raft log store with f (disk faults).
func WrapLogStore(cfg *Config, f func(raft.LogStore) raft.LogStore) {
	nodeconfig.TestHooks(cfg).WrapLogStore = f
}

// WrapSnapshotStore makes the node wrap its Raft snapshot store with f
// (failed snapshot writes).
func WrapSnapshotStore(cfg *Config, f func(raft.SnapshotStore) raft.SnapshotStore) {
	nodeconfig.TestHooks(cfg).WrapSnapshotStore = f
}

// HoldWritesAsARestore does to n what a restore does before it prepares
// its snapshot: writes held back, the leader's proposer halted. release
// lets writes through again.
func HoldWritesAsARestore(n *Node) (release func()) {
	n.restore.on.Store(true)
	n.restore.mu.Lock() // every entry handed to Raft before is in its log
	//lint:ignore SA2001 a barrier: it waits until no entry is being handed to Raft
	n.restore.mu.Unlock()
	if p := n.leading.Load(); p != nil {
		p.halt()
	}
	return func() { n.restore.on.Store(false) }
}

// Serving reports whether n is an established leader that serves.
func Serving(n *Node) bool { return n.leading.Load() != nil }
