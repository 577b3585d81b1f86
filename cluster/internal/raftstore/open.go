package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tenure-io/tenure/cluster/internal/identity"
	"github.com/tenure-io/tenure/fsm"
	bolt "go.etcd.io/bbolt"
)

// DBFile is the name of the Raft log and stable store in the data dir.
const DBFile = "raft.db"

// storeLockTimeout bounds the wait for the lock on raft.db, which another
// process holds while it runs on the same data dir.
const storeLockTimeout = 2 * time.Second

// OpenLogStore checks raft.db page by page and opens it. A damaged file
// (bbolt refuses it, reports a bad page, or panics on it) is an
// identity.ErrRefusedStart error naming the file and what to do, never a panic:
// bbolt trusts its pages and panics, or faults on memory past the end of a
// truncated file, when it follows a damaged one.
func OpenLogStore(dataDir, nodeID string) (*raftboltdb.BoltStore, error) {
	path := filepath.Join(dataDir, DBFile)
	if err := checkBolt(path); err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s is locked by another process: is another server running on data dir %s?", identity.ErrRefusedStart, path, dataDir)
		}
		return nil, DamagedStore(path, dataDir, nodeID, err)
	}
	var store *raftboltdb.BoltStore
	err := guard(func() error {
		var err error
		// NoFreelistSync, as etcd's backend does: a commit does not
		// write bbolt's freelist, which is rebuilt by a scan at open
		// (checkBolt reads every page anyway). Every append of the log
		// commits, on the leader before it replicates and on each
		// follower before it answers: 7-10% off the commit time of one
		// acquisition (test/bench/results/2026-11-24-acquire.md).
		opts := &bolt.Options{Timeout: storeLockTimeout, NoFreelistSync: true, FreelistType: bolt.FreelistMapType}
		store, err = raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: opts})
		return err
	})
	if err != nil {
		return nil, DamagedStore(path, dataDir, nodeID, err)
	}
	return store, nil
}

// checkBolt opens the bbolt file at path read-only and reads every key of
// its two buckets: the log must hold 8-byte indexes without a gap, each
// with an entry, and the stable store its keys. Reading them walks every
// branch and leaf page that the stores use, where bbolt trusts what it
// finds. A missing or empty file is fine: bbolt makes a new one.
func checkBolt(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Size() == 0 {
		return nil
	}
	// No tree of this file holds more keys than this: more means the
	// walk is going round a cycle of damaged pages.
	maxKeys := info.Size() / 16
	return guard(func() error {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: storeLockTimeout})
		if err != nil {
			return err
		}
		defer db.Close()
		return db.View(func(tx *bolt.Tx) error {
			logs, conf := tx.Bucket([]byte("logs")), tx.Bucket([]byte("conf"))
			if logs == nil || conf == nil {
				return errors.New("the logs or conf bucket is missing")
			}
			var prev, n int64
			c := logs.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if len(k) != 8 {
					return fmt.Errorf("log key %x is not an index", k)
				}
				// Indexes increase; gaps are not damage: a follower that
				// installs a snapshot keeps its old entries above the
				// compaction point and appends after the snapshot's index.
				idx := int64(binary.BigEndian.Uint64(k))
				if n > 0 && idx <= prev {
					return fmt.Errorf("log index %d follows %d", idx, prev)
				}
				if len(v) == 0 {
					return fmt.Errorf("log entry %d is empty", idx)
				}
				if prev, n = idx, n+1; n > maxKeys {
					return errors.New("the log's pages form a cycle")
				}
			}
			n = 0
			return conf.ForEach(func(k, v []byte) error {
				if n++; n > maxKeys {
					return errors.New("the stable store's pages form a cycle")
				}
				return nil
			})
		})
	})
}

// guard runs f on a goroutine of its own that turns a memory fault into a
// panic, and a panic into an error.
func guard(f func() error) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("reading it failed: %v", r)
			}
		}()
		done <- f()
	}()
	return <-done
}

// DamagedStore is the error of a store file that cannot be read.
func DamagedStore(path, dataDir, nodeID string, cause error) error {
	return fmt.Errorf("%w: %s is damaged (%w). Its copy of the log cannot be trusted; %s",
		identity.ErrRefusedStart, path, cause, ResyncRemedy(nodeID, dataDir))
}

// ResyncRemedy is what an operator does with a server whose Raft state
// cannot be trusted or is gone: the server leaves the configuration
// before it comes back empty, so that it never votes twice in a term
// (ADR 0015), and is readmitted at once (ADR 0016).
func ResyncRemedy(nodeID, dataDir string) string {
	return fmt.Sprintf("resync this server from the cluster, while the other servers have a leader: "+
		"remove it from the cluster (tenure operator remove-server -force %[1]s, against a running server; "+
		"-force because the removal leaves fewer voters than the cluster was bootstrapped with), "+
		"move the data dir %[2]s aside (keep it for diagnosis), start this server again with an empty data dir and the same flags, "+
		"and readmit it (tenure operator readmit-server %[1]s; the leader also admits it on its own a minute after the removal): "+
		"it rejoins as a non-voter, receives the state from the leader, and is promoted once caught up. "+
		"If no other server of the cluster holds the data, restore the data dir from a backup instead", nodeID, dataDir)
}

// NewRaft is raft.NewRaft with a panic in the stores (a damaged page
// read while loading the last log entry or the snapshot) turned into an
// error, and a failed snapshot restore named as such: an identity.ErrRefusedStart
// error naming the snapshots of dataDir, or its raft.db.
func NewRaft(rc *raft.Config, machine raft.FSM, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, trans raft.Transport, dataDir, nodeID string) (*raft.Raft, error) {
	var r *raft.Raft
	err := guard(func() error {
		var err error
		r, err = raft.NewRaft(rc, machine, logs, stable, snaps, trans)
		return err
	})
	if err == nil {
		return r, nil
	}
	// Raft has no sentinel for a failed snapshot restore ("failed to load
	// any existing snapshots"): its message is all there is to tell it
	// from a log store error.
	if strings.Contains(err.Error(), "snapshot") {
		return nil, DamagedStore(filepath.Join(dataDir, "snapshots"), dataDir, nodeID, err)
	}
	return nil, DamagedStore(filepath.Join(dataDir, DBFile), dataDir, nodeID, err)
}

// ReplicatedClusterID is the cluster id of the Raft state in dataDir at
// start: restored, the id of the snapshot Raft restored (the state
// machine's), else the first ClusterID entry of logs (the log is not
// replayed yet when Raft has just started). It reads the log only until
// it finds one. A log it cannot read is an identity.ErrRefusedStart error.
func ReplicatedClusterID(restored string, logs raft.LogStore, dataDir, nodeID string) (string, error) {
	if restored != "" {
		return restored, nil
	}
	var id string
	err := guard(func() error {
		first, err := logs.FirstIndex()
		if err != nil {
			return err
		}
		last, err := logs.LastIndex()
		if err != nil {
			return err
		}
		for i := first; i != 0 && i <= last; i++ {
			var l raft.Log
			if err := logs.GetLog(i, &l); errors.Is(err, raft.ErrLogNotFound) {
				continue // a gap left by a snapshot install, not damage
			} else if err != nil {
				return fmt.Errorf("log entry %d: %w", i, err)
			}
			if l.Type != raft.LogCommand {
				continue
			}
			if got, ok := fsm.IsClusterID(l.Data); ok {
				id = got
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return "", DamagedStore(filepath.Join(dataDir, DBFile), dataDir, nodeID, err)
	}
	return id, nil
}

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
