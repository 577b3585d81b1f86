package cluster

import (
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/raftstore"
	"github.com/tenure-io/tenure/fsm"
)

// errStopped answers every Apply, Snapshot and Restore after an entry was
// refused.
var errStopped = errors.New("the state machine stopped at an entry it could not apply")

// checkedFSM is the raft.FSM of a Node: the lease machine, applied through
// fsm.Machine.ApplyLog. On an entry it cannot apply it applies nothing,
// logs the LogEntryError, hands it to fail, and blocks Raft's FSM goroutine
// until the node shuts down (fail starts that): no later entry is applied
// and no snapshot is taken, so the state never moves past the bad entry.
type checkedFSM struct {
	machine *fsm.Machine
	dataDir string
	nodeID  string
	log     hclog.Logger
	fail    func(error)
	stop    <-chan struct{}
	failed  atomic.Bool
	// applied follows the entries consumed, for linearizable reads.
	applied *appliedIndex
	// configured is called for each committed configuration entry.
	configured func(raft.Configuration)
}

// checkedFSM is the raft.FSM that n's Raft applies to.
func (n *Node) checkedFSM() *checkedFSM {
	return &checkedFSM{machine: n.machine, dataDir: n.cfg.DataDir, nodeID: n.cfg.NodeID, log: n.log, fail: n.fail, stop: n.shutdownCh, applied: &n.applied,
		configured: n.configured}
}

// Apply runs on Raft's FSM goroutine.
func (c *checkedFSM) Apply(l *raft.Log) interface{} {
	if c.failed.Load() {
		return errStopped
	}
	out, err := c.machine.ApplyLog(l)
	if err == nil {
		c.applied.set(l.Index)
		return out
	}
	c.failed.Store(true)
	e := &raftstore.LogEntryError{Path: filepath.Join(c.dataDir, "raft.db"), DataDir: c.dataDir, NodeID: c.nodeID, Index: l.Index, Err: err}
	c.log.Error("log entry refused; stopping", "index", l.Index, "path", e.Path, "error", e)
	c.fail(e)
	<-c.stop
	return errStopped
}

// StoreConfiguration runs on Raft's FSM goroutine for every committed
// configuration entry (raft.ConfigurationStore): the lease machine keeps
// none, but a read waiting for this index may go on.
func (c *checkedFSM) StoreConfiguration(index uint64, cfg raft.Configuration) {
	if !c.failed.Load() {
		c.applied.set(index)
	}
	if c.configured != nil {
		c.configured(cfg)
	}
}

// Snapshot runs on Raft's FSM goroutine.
func (c *checkedFSM) Snapshot() (raft.FSMSnapshot, error) {
	if c.failed.Load() {
		return nil, errStopped
	}
	return c.machine.Snapshot()
}

// Restore runs on Raft's FSM goroutine.
func (c *checkedFSM) Restore(rc io.ReadCloser) error {
	if c.failed.Load() {
		rc.Close()
		return errStopped
	}
	if err := c.machine.Restore(rc); err != nil {
		return err
	}
	applied, _, _ := c.machine.Indexes()
	c.applied.set(applied)
	return nil
}

// Failed delivers, once, the error that made this node stop on its own (a
// log entry it could not apply, a *LogEntryError); the node is then
// shutting down. A server process exits with it.
func (n *Node) Failed() <-chan error { return n.failed }

// fail records err for Failed and shuts the node down. It does not wait
// for the shutdown: it runs on Raft's FSM goroutine, which the shutdown
// waits for.
func (n *Node) fail(err error) {
	select {
	case n.failed <- err:
	default:
	}
	go n.Shutdown()
}
