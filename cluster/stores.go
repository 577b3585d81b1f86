package cluster

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster/internal/identity"
	"github.com/tenure-io/tenure/cluster/internal/raftstore"
)

// LogEntryError: this server found an entry of its Raft log that it
// cannot apply, and stopped rather than skip it; Failed delivers it
// (raftstore.LogEntryError says more).
type LogEntryError = raftstore.LogEntryError

// Recovery is what RecoverAlone did.
type Recovery = raftstore.Recovery

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
//
// tokenFloor is a bound of the tokens the lost servers may have handed
// out (0 for none). Above the survivor's counter, it says the survivor
// missed grants, so that any lease it holds may have been granted since
// to another holder: the counter is raised to it and every held lease is
// freed, keeping its token (fsm.PrepareRecovery), so a key's tokens never
// go backwards and no key has two holders.
func RecoverAlone(dataDir, nodeID string, tokenFloor uint64, log hclog.Logger) (Recovery, error) {
	id, found, err := ReadIdentity(dataDir)
	if err != nil {
		return Recovery{}, err
	}
	if !found {
		return Recovery{}, fmt.Errorf("%s: no %s: not the data dir of a tenure server", dataDir, identity.File)
	}
	if id.NodeID != nodeID {
		return Recovery{}, fmt.Errorf("%s is the data dir of server %s, not %s", dataDir, id.NodeID, nodeID)
	}
	return raftstore.Recover(dataDir, nodeID, tokenFloor, log)
}
