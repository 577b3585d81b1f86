package cluster

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/fsm"
)

// LogEntryError: this server found an entry of its Raft log that it cannot
// apply, and stopped rather than skip it (a replica that skipped it would
// serve a different state from its peers). When Err wraps fsm.ErrCorrupt
// the entry is damaged and the remedy is a fresh copy of the log from the
// leader; otherwise it is intact but written by a newer build, and the
// remedy is an upgrade. Error() names the file, the index and the remedy.
type LogEntryError struct {
	// Path is the log store, DataDir/raft.db.
	Path    string
	DataDir string
	NodeID  string
	Index   uint64
	Err     error
}

func (e *LogEntryError) Error() string {
	if errors.Is(e.Err, fsm.ErrCorrupt) {
		return fmt.Sprintf("the log is damaged: entry %d of %s: %v; this server stops instead of applying it. Keep it stopped and %s "+
			"(see \"A damaged Raft log\" in the README)", e.Index, e.Path, e.Err, resyncRemedy(e.NodeID, e.DataDir))
	}
	return fmt.Sprintf("cannot apply entry %d of %s: %v; it was written by a newer build: upgrade this server", e.Index, e.Path, e.Err)
}

func (e *LogEntryError) Unwrap() error { return e.Err }

// Is makes a damaged entry a refusal to start (ErrRefusedStart): like a
// damaged store, it stays until an operator resyncs the server.
func (e *LogEntryError) Is(target error) bool {
	return target == ErrRefusedStart && errors.Is(e.Err, fsm.ErrCorrupt)
}

// checkLogStore reads every entry of the log store and checks the data of
// each command entry (fsm.Verify: the checksum, or a full decode for an
// entry written before checksums). It runs before Raft starts, so that a
// damaged entry is found even below the last snapshot, where it is never
// applied again but would still be sent to a follower if this server led.
// Its cost is in docs/adr/0001-command-encoding.md (BenchmarkCheckLogStore).
func checkLogStore(store raft.LogStore, dataDir, nodeID string) error {
	path := filepath.Join(dataDir, "raft.db")
	first, err := store.FirstIndex()
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if first == 0 {
		return nil // empty
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		err := store.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			// Not damage: Raft leaves gaps. A follower that installs a
			// snapshot keeps the entries of its old log above the
			// compaction point and appends after the snapshot's index.
			continue
		}
		if err != nil {
			return &LogEntryError{Path: path, DataDir: dataDir, NodeID: nodeID, Index: i, Err: fmt.Errorf("%w: %w", fsm.ErrCorrupt, err)}
		}
		if l.Index != i {
			// A damaged key: the entry stored under i says it is another.
			return &LogEntryError{Path: path, DataDir: dataDir, NodeID: nodeID, Index: i, Err: fmt.Errorf("%w: the entry stored under index %d says it is entry %d", fsm.ErrCorrupt, i, l.Index)}
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if err := fsm.Verify(l.Data); err != nil {
			return &LogEntryError{Path: path, DataDir: dataDir, NodeID: nodeID, Index: i, Err: err}
		}
	}
	return nil
}

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
	e := &LogEntryError{Path: filepath.Join(c.dataDir, "raft.db"), DataDir: c.dataDir, NodeID: c.nodeID, Index: l.Index, Err: err}
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
