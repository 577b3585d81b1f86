package cluster_test

import (
	"encoding/binary"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
)

// A follower that installed a snapshot keeps its old log entries above the
// compaction point and appends after the snapshot's index: its raft.db
// has a gap of indexes. That is not damage: after more writes it restarts,
// and the start-up checks of the store accept it (they once refused it as
// "damaged", telling the operator to wipe a healthy server).
func TestFollowerRestartsAfterSnapshotInstall(t *testing.T) {
	var mu sync.Mutex
	dirs := map[string]string{}
	c, held, lagging, last := snapshotInstalledOnLagging(t, func(cfg *cluster.Config) {
		mu.Lock()
		dirs[cfg.NodeID] = cfg.DataDir
		mu.Unlock()
	})
	for i := 0; i < 5; i++ {
		l := acquire(t, c, "after", "h", time.Minute)
		last = l.Token
		if _, err := c.Node(c.Leader()).Release(harness.Context(t, 5*time.Second), "after", "h", testSecret, l.Token); err != nil {
			t.Fatal(err)
		}
	}
	harness.WaitUntil(t, 10*time.Second, "the follower applies the writes after the install", func() bool {
		return cluster.MachineOf(c.Node(lagging)).LastToken() == last
	})
	id := c.Peer(lagging).ID
	c.Stop(lagging)

	db, err := bolt.Open(filepath.Join(dirs[id], "raft.db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys []uint64
	db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("logs")).ForEach(func(k, _ []byte) error {
			keys = append(keys, binary.BigEndian.Uint64(k))
			return nil
		})
	})
	db.Close()
	gap := false
	for i := 1; i < len(keys); i++ {
		gap = gap || keys[i] != keys[i-1]+1
	}
	if !gap {
		t.Skipf("the follower's log has no gap (%v): the scenario did not happen", keys)
	}
	t.Logf("the follower's log indexes: %v", keys)

	c.Restart(lagging)
	harness.WaitUntil(t, 10*time.Second, "the restarted follower serves the state", func() bool {
		l := cluster.MachineOf(c.Node(lagging)).Get("scene-01")
		return l != nil && l.Holder == "tracker-0" && l.Token == held.Token
	})
}
