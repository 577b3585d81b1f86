package raftstore

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/fsm"
)

// Recovery is what Recover (cluster.RecoverAlone) did.
type Recovery struct {
	// Before is the Raft configuration the data dir held; After is the
	// new one: this server, alone, as a voter.
	Before, After raft.Configuration
	// Leases, Held and LastToken are the state the server starts with.
	Leases, Held int
	LastToken    uint64
	ClusterID    string
	// Freed counts the leases freed because tokenFloor was above the
	// survivor's counter (see cluster.RecoverAlone).
	Freed int
}

// Recover rewrites the Raft configuration of the stopped server nodeID
// on dataDir so that it is the only voter (cluster.RecoverAlone says what
// that means, and what tokenFloor does). The caller has checked that
// dataDir is nodeID's.
func Recover(dataDir, nodeID string, tokenFloor uint64, log hclog.Logger) (Recovery, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	store, err := OpenLogStore(dataDir, nodeID)
	if err != nil {
		return Recovery{}, err
	}
	defer store.Close()
	if err := CheckLogStore(store, dataDir, nodeID); err != nil {
		return Recovery{}, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 3, log.Named("snapshot"))
	if err != nil {
		return Recovery{}, fmt.Errorf("snapshot store: %w", err)
	}
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return Recovery{}, fmt.Errorf("read the raft state of %s: %w", dataDir, err)
	}
	if !has {
		return Recovery{}, fmt.Errorf("%s holds no raft state: nothing to recover", filepath.Join(dataDir, DBFile))
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(nodeID)
	rc.Logger = log.Named("raft")
	_, trans := raft.NewInmemTransport("")
	before, err := raft.GetConfiguration(rc, fsm.New(), store, store, snaps, trans)
	if err != nil {
		return Recovery{}, fmt.Errorf("read the raft configuration: %w", err)
	}
	var self *raft.Server
	for i, s := range before.Servers {
		if s.ID == raft.ServerID(nodeID) {
			self = &before.Servers[i]
		}
	}
	if self == nil {
		return Recovery{}, fmt.Errorf("server %s is not in the raft configuration its data dir holds (%v): recover a server that is", nodeID, before.Servers)
	}
	after := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: self.ID, Address: self.Address}}}
	m := fsm.New()
	rc = raft.DefaultConfig()
	rc.LocalID = raft.ServerID(nodeID)
	rc.Logger = log.Named("raft")
	// guard: an entry this build cannot apply is an error, not a crash.
	if err := guard(func() error { return raft.RecoverCluster(rc, m, store, store, snaps, trans, after) }); err != nil {
		return Recovery{}, fmt.Errorf("recover: %w", err)
	}
	freed := 0
	if tokenFloor > m.LastToken() {
		if freed, err = raiseTokenFloor(snaps, trans, tokenFloor, m); err != nil {
			return Recovery{}, fmt.Errorf("recovered, but raising the token counter to %d failed (run the recovery again): %w", tokenFloor, err)
		}
	}
	held, free := m.Counts()
	return Recovery{Before: before, After: after, Leases: held + free, Held: held, LastToken: m.LastToken(), ClusterID: m.ClusterID(), Freed: freed}, nil
}

// raiseTokenFloor rewrites the newest snapshot of snaps (the one
// RecoverCluster just wrote) with fsm.PrepareRecovery as a newer snapshot
// of the same index and term, which the server restores at start, and
// restores m from it.
func raiseTokenFloor(snaps raft.SnapshotStore, trans raft.Transport, floor uint64, m *fsm.Machine) (int, error) {
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		return 0, fmt.Errorf("list snapshots: %d, %v", len(list), err)
	}
	meta, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return 0, fmt.Errorf("open snapshot %s: %w", list[0].ID, err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return 0, fmt.Errorf("read snapshot %s: %w", meta.ID, err)
	}
	out, freed, err := fsm.PrepareRecovery(b, floor)
	if err != nil {
		return 0, err
	}
	// A file snapshot's id ends with the time in milliseconds: the new one
	// must sort after the old one.
	for deadline := time.Now().Add(time.Second); time.Now().UnixMilli() <= snapshotMillis(meta.ID) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	sink, err := snaps.Create(meta.Version, meta.Index, meta.Term, meta.Configuration, meta.ConfigurationIndex, trans)
	if err != nil {
		return 0, fmt.Errorf("create snapshot: %w", err)
	}
	if _, err := sink.Write(out); err != nil {
		sink.Cancel()
		return 0, fmt.Errorf("write snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return 0, fmt.Errorf("write snapshot: %w", err)
	}
	if list, err := snaps.List(); err != nil || len(list) == 0 || list[0].ID != sink.ID() {
		return 0, fmt.Errorf("the rewritten snapshot %s is not the newest: %v", sink.ID(), err)
	}
	if err := m.Restore(io.NopCloser(bytes.NewReader(out))); err != nil {
		return 0, err
	}
	return freed, nil
}

// snapshotMillis is the time part of a file snapshot id
// (term-index-milliseconds), or 0.
func snapshotMillis(id string) int64 {
	i := strings.LastIndexByte(id, '-')
	ms, _ := strconv.ParseInt(id[i+1:], 10, 64)
	return ms
}
