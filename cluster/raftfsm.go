package cluster

import (
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/raftstore"
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
	n      *Node
	failed atomic.Bool
}

// Apply runs on Raft's FSM goroutine.
func (c *checkedFSM) Apply(l *raft.Log) interface{} {
	if c.failed.Load() {
		return errStopped
	}
	n := c.n
	out, err := n.machine.ApplyLog(l)
	if err == nil {
		n.applied.set(l.Index) // a read waiting for this index may go on
		return out
	}
	c.failed.Store(true)
	e := &raftstore.LogEntryError{Path: filepath.Join(n.cfg.DataDir, "raft.db"), DataDir: n.cfg.DataDir, NodeID: n.cfg.NodeID, Index: l.Index, Err: err}
	n.log.Error("log entry refused; stopping", "index", l.Index, "path", e.Path, "error", e)
	n.fail(e)
	<-n.shutdownCh
	return errStopped
}

// StoreConfiguration runs on Raft's FSM goroutine for every committed
// configuration entry (raft.ConfigurationStore): the lease machine keeps
// none, but a read waiting for this index may go on.
func (c *checkedFSM) StoreConfiguration(index uint64, cfg raft.Configuration) {
	if !c.failed.Load() {
		c.n.applied.set(index)
	}
	c.n.configured(cfg)
}

// Snapshot runs on Raft's FSM goroutine.
func (c *checkedFSM) Snapshot() (raft.FSMSnapshot, error) {
	if c.failed.Load() {
		return nil, errStopped
	}
	return c.n.machine.Snapshot()
}

// Restore runs on Raft's FSM goroutine.
func (c *checkedFSM) Restore(rc io.ReadCloser) error {
	if c.failed.Load() {
		rc.Close()
		return errStopped
	}
	if err := c.n.machine.Restore(rc); err != nil {
		return err
	}
	applied, _, _ := c.n.machine.Indexes()
	c.n.applied.set(applied)
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
