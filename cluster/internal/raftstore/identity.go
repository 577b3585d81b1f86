package raftstore

import (
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/identity"
)

// CheckClusterID compares the cluster id of the replicated state in the
// data dir (replicated; "" when it names none yet) with the identity file.
func CheckClusterID(dataDir string, id identity.Identity, replicated string) error {
	if id.ClusterID == "" || replicated == "" || id.ClusterID == replicated {
		return nil
	}
	return fmt.Errorf("%w: the Raft state in %s belongs to cluster %s, but %s says this server is a member of cluster %s: raft.db or the snapshots were copied from another cluster's server. Put this server's own files back, or %s",
		identity.ErrRefusedStart, dataDir, replicated, identity.File, id.ClusterID, ResyncRemedy(id.NodeID, dataDir))
}

// LostRaftState is the error of a data dir whose identity file says the
// server has been a member of a cluster but whose Raft state is gone.
func LostRaftState(dataDir string, id identity.Identity) error {
	return fmt.Errorf("%w: %s says server %s has been a member of cluster %s, but %s holds no Raft state (raft.db was deleted, emptied or recreated: no term, no vote): "+
		"it has lost its term and its vote, and starting it could let it vote twice in one term. %s "+
		"(instead of an empty data dir, starting this one once with -allow-lost-raft-state, after the removal, does the same)",
		identity.ErrRefusedStart, identity.File, id.NodeID, id.ClusterID, dataDir, ResyncRemedy(id.NodeID, dataDir))
}
