package raftstore

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/identity"
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
			"(see \"A damaged Raft log\" in docs/operations.md)", e.Index, e.Path, e.Err, ResyncRemedy(e.NodeID, e.DataDir))
	}
	return fmt.Sprintf("cannot apply entry %d of %s: %v; it was written by a newer build: upgrade this server", e.Index, e.Path, e.Err)
}

func (e *LogEntryError) Unwrap() error { return e.Err }

// Is makes a damaged entry a refusal to start (identity.ErrRefusedStart): like a
// damaged store, it stays until an operator resyncs the server.
func (e *LogEntryError) Is(target error) bool {
	return target == identity.ErrRefusedStart && errors.Is(e.Err, fsm.ErrCorrupt)
}

// CheckLogStore reads every entry of the log store and checks the data of
// each command entry (fsm.Verify: the checksum, or a full decode for an
// entry written before checksums). It runs before Raft starts, so that a
// damaged entry is found even below the last snapshot, where it is never
// applied again but would still be sent to a follower if this server led.
// Its cost is in docs/adr/0001-command-encoding.md (BenchmarkCheckLogStore).
func CheckLogStore(store raft.LogStore, dataDir, nodeID string) error {
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
