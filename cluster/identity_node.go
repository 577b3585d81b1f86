package cluster

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/cluster/internal/identity"
	"github.com/tenure-io/tenure/cluster/internal/raftstore"
	"github.com/tenure-io/tenure/fsm"
)

// ErrRefusedStart is wrapped by every error that makes a server refuse to
// start on its data dir: a data dir of another server or cluster, a
// damaged store, lost Raft state. Each error says what to do.
var ErrRefusedStart = identity.ErrRefusedStart

// Identity is what the identity file holds (identity.Identity).
type Identity = identity.Identity

// ReadIdentity reads the identity file of dataDir. found is false, with no
// error, when the file does not exist.
func ReadIdentity(dataDir string) (id Identity, found bool, err error) { return identity.Read(dataDir) }

// WriteFileDurably writes b to path through a temporary file of the same
// directory, synced, renamed over path, and the directory synced: path is
// the old file or the whole new one, also after a crash.
func WriteFileDurably(path string, b []byte, perm os.FileMode) error {
	return identity.WriteFileDurably(path, b, perm)
}

// checkLostState refuses a data dir whose identity file says this server
// has been a member of a cluster but whose stable store holds no term:
// its term and vote are gone (raft.db deleted, emptied or recreated, also
// when snapshots are left), and it could vote twice in a term. With
// AllowLostRaftState it starts anyway, as a server new to the cluster: the
// identity file forgets the cluster until the server learns it again, and
// gossip announces it without Raft state, so that the leader admits it.
func (n *Node) checkLostState(id Identity, stable raft.StableStore) (Identity, error) {
	if id.ClusterID == "" {
		return id, nil
	}
	term, err := stable.GetUint64([]byte("CurrentTerm"))
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return id, raftstore.DamagedStore(filepath.Join(n.cfg.DataDir, raftstore.DBFile), n.cfg.DataDir, n.cfg.NodeID, err)
	}
	if term > 0 {
		return id, nil
	}
	if !n.cfg.AllowLostRaftState {
		return id, raftstore.LostRaftState(n.cfg.DataDir, id)
	}
	n.log.Warn("starting without the Raft state of a former member, as -allow-lost-raft-state says: this server must have been removed from the Raft configuration first",
		"node_id", id.NodeID, "cluster_id", id.ClusterID, "data_dir", n.cfg.DataDir)
	n.hadState = false
	id.ClusterID = ""
	return id, identity.Write(n.cfg.DataDir, id)
}

// checkIdentity runs once Raft has restored the latest snapshot: the
// cluster id of the data dir's replicated state must be the identity
// file's. A file without one records it.
func (n *Node) checkIdentity(id Identity, logs raft.LogStore) (Identity, error) {
	replicated, err := raftstore.ReplicatedClusterID(n.machine.ClusterID(), logs, n.cfg.DataDir, n.cfg.NodeID)
	if err != nil {
		return id, err
	}
	if err := raftstore.CheckClusterID(n.cfg.DataDir, id, replicated); err != nil {
		return id, err
	}
	if id.ClusterID == "" && replicated != "" {
		id.ClusterID = replicated
		if err := identity.Write(n.cfg.DataDir, id); err != nil {
			return id, err
		}
	}
	return id, nil
}

// nameCluster gives the cluster its id: an established leader whose state
// machine has none (a new cluster, or one written by a build without
// cluster ids) proposes a random one. The state machine keeps the first
// one applied, so two leaders racing cannot give the cluster two ids.
func (n *Node) nameCluster() error {
	if n.machine.ClusterID() != "" {
		return nil
	}
	id, err := acl.NewUUID()
	if err != nil {
		return err
	}
	if _, err := n.applyCommand(fsm.ClusterID{ID: id}); err != nil {
		return fmt.Errorf("apply cluster id: %w", err)
	}
	n.log.Info("cluster named", "cluster_id", n.machine.ClusterID())
	return nil
}

// keyBackups gives the cluster the key that signs its backups
// (fsm.BackupKey): an established leader whose state machine has none (a
// new cluster, or one written by a build without signed backups) draws
// one. The state machine keeps the first one applied.
func (n *Node) keyBackups() error {
	if n.machine.HasBackupKey() {
		return nil
	}
	key := make([]byte, fsm.BackupKeyLen)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("backup key: %w", err)
	}
	if _, err := n.applyCommand(fsm.BackupKey{Key: key}); err != nil {
		return fmt.Errorf("apply backup key: %w", err)
	}
	n.log.Info("backup key made")
	return nil
}

// recordClusterID writes the cluster id into the identity file as soon as
// the state machine knows it, checking every interval until it does, and
// logs an error if the replicated state names another cluster than the
// file. It ends at shutdown or once the id is recorded.
func (n *Node) recordClusterID(id Identity, interval time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if got := n.machine.ClusterID(); got != "" {
			switch {
			case id.ClusterID == got:
			case id.ClusterID != "":
				n.log.Error("the replicated state names another cluster than the identity file", "file", identity.File,
					"identity_cluster_id", id.ClusterID, "replicated_cluster_id", got)
			default:
				next := id
				next.ClusterID = got
				if err := identity.Write(n.cfg.DataDir, next); err != nil {
					n.log.Error("cannot record the cluster id in the data dir", "error", err)
					break // retried at the next tick
				}
				id = next
				n.log.Info("cluster id recorded", "cluster_id", got, "file", identity.File)
			}
			if id.ClusterID != "" {
				return
			}
		}
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
	}
}

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
