package cluster

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/fsm"
)

// Recovery is what RecoverAlone did.
type Recovery struct {
	// Before is the Raft configuration the data dir held; After is the
	// new one: this server, alone, as a voter.
	Before, After raft.Configuration
	// Leases, Held and LastToken are the state the server starts with.
	Leases, Held int
	LastToken    uint64
	ClusterID    string
}

// RecoverAlone rewrites the Raft configuration of the stopped server
// nodeID on dataDir so that it is the only voter, keeping everything its
// log and snapshots hold (hashicorp/raft's RecoverCluster: a snapshot of
// the state with the new configuration, and the log truncated). It is the
// way back when a quorum of servers is lost for good: started again, the
// server elects itself and serves; fresh servers then join it.
//
// Every entry in its log counts as committed afterwards, also one the
// lost servers never acknowledged: a write whose client got no answer may
// have happened. Servers of the old configuration must never run again on
// their old data dirs: wipe them, and join them as new servers.
func RecoverAlone(dataDir, nodeID string, log hclog.Logger) (Recovery, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	id, found, err := ReadIdentity(dataDir)
	if err != nil {
		return Recovery{}, err
	}
	if !found {
		return Recovery{}, fmt.Errorf("%s: no %s: not the data dir of a tenure server", dataDir, IdentityFile)
	}
	if id.NodeID != nodeID {
		return Recovery{}, fmt.Errorf("%s is the data dir of server %s, not %s", dataDir, id.NodeID, nodeID)
	}
	store, err := openLogStore(dataDir, nodeID)
	if err != nil {
		return Recovery{}, err
	}
	defer store.Close()
	if err := checkLogStore(store, dataDir, nodeID); err != nil {
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
		return Recovery{}, fmt.Errorf("%s holds no raft state: nothing to recover", filepath.Join(dataDir, raftDBFile))
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
	held, free := m.Counts()
	return Recovery{Before: before, After: after, Leases: held + free, Held: held, LastToken: m.LastToken(), ClusterID: m.ClusterID()}, nil
}
