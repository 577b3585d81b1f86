package cluster_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
)

// An operator's removal cannot cost quorum by accident: a server that is
// alive and answers the leader (the leader itself too) is refused without
// force, and so is a voter whose removal leaves fewer voters than the
// cluster was bootstrapped with; each refusal names its rule and changes
// nothing. With force the removal goes ahead, lists the rules it overrode
// and says how to bring the server back.
func TestRemoveServerRefusesWhatCouldCostQuorum(t *testing.T) {
	c := gossipCluster(t, 3, nil)
	l := c.Leader()
	leader := c.Node(l)
	victim := (l + 1) % 3
	id := c.Peer(victim).ID
	remove := func(id string, force bool) (cluster.RemoveResult, error) {
		return leader.RemoveServer(harness.Context(t, 5*time.Second), id, force)
	}
	for _, tc := range []struct{ name, id, rule string }{
		{"an alive follower", id, "is alive: the leader heard from it"},
		{"the leader itself", c.Peer(l).ID, "is alive: it is the leader"},
	} {
		_, err := remove(tc.id, false)
		if !errors.Is(err, cluster.ErrUnsafeRemoval) || !strings.Contains(err.Error(), tc.rule) || !strings.Contains(err.Error(), "force") {
			t.Errorf("remove %s without force: %v, want ErrUnsafeRemoval naming the rule %q and force", tc.name, err, tc.rule)
		}
	}
	if got := voters(configuration(t, leader)); len(got) != 3 {
		t.Fatalf("voters after refused removals: %v, want all three", got)
	}

	c.Stop(victim)
	var err error
	harness.WaitUntil(t, 10*time.Second, "the stopped server to count as out of touch", func() bool {
		_, err = remove(id, false)
		return err != nil && !strings.Contains(err.Error(), "is alive")
	})
	if !errors.Is(err, cluster.ErrUnsafeRemoval) || !strings.Contains(err.Error(), "leaves 2 voters, fewer than the 3") {
		t.Fatalf("remove a stopped voter of three without force: %v, want ErrUnsafeRemoval naming the configured size", err)
	}
	if got := voters(configuration(t, leader)); len(got) != 3 {
		t.Fatalf("voters after a refused removal: %v, want all three", got)
	}
	res, err := remove(id, true)
	if err != nil {
		t.Fatalf("remove with force: %v", err)
	}
	if res.Voters != 2 || len(res.Forced) != 1 || !strings.Contains(res.Readmit, "readmit-server "+id) {
		t.Errorf("forced removal = %+v, want 2 voters, the rule it overrode, and how to readmit %s", res, id)
	}
	if _, err := remove("n9", true); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("remove an unknown server: %v, want ErrNotFound", err)
	}
}

// A removed server comes back with its data dir: started again, it stays
// out (it has Raft state) until an operator readmits it; then it joins as
// a non-voter, is promoted once caught up (the cluster is below its
// configured size), replicates, and its vote counts: the cluster commits
// with it and the leader alone.
func TestRemovedServerReadmittedWithItsDataDir(t *testing.T) {
	c := gossipCluster(t, 3, func(cfg *cluster.Config) { cfg.ServerStabilization = 500 * time.Millisecond })
	l := c.Leader()
	victim := (l + 1) % 3
	id := c.Peer(victim).ID
	c.Stop(victim)
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		_, err := n.RemoveServer(harness.Context(t, 5*time.Second), id, true)
		return err
	}); err != nil {
		t.Fatalf("remove %s: %v", id, err)
	}
	acquire := func(key string) {
		t.Helper()
		if err := leaderAcquires(t, c, 10*time.Second, 5*time.Second, key, time.Minute); err != nil {
			t.Fatalf("acquire %s: %v", key, err)
		}
	}
	acquire("while-removed")
	c.Restart(victim)
	harness.Holds(t, 2*time.Second, func() error {
		if _, ok := leaderConfiguration(t, c)[id]; ok {
			return errors.New(id + " is back in the configuration before it was readmitted")
		}
		return nil
	})
	var srv cluster.Server
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		var err error
		srv, err = n.ReadmitServer(harness.Context(t, 5*time.Second), id)
		return err
	}); err != nil {
		t.Fatalf("readmit %s: %v", id, err)
	}
	if srv.ID != id || srv.RaftAddr != c.Peer(victim).RaftAddr {
		t.Errorf("readmitted %+v, want %s at %s", srv, id, c.Peer(victim).RaftAddr)
	}
	harness.WaitUntil(t, 20*time.Second, id+" to be a voter again", func() bool {
		s, ok := leaderConfiguration(t, c)[id]
		return ok && s.Suffrage == raft.Voter
	})
	// Its vote counts: with the third server stopped, the leader and the
	// readmitted server commit.
	other := 3 - l - victim
	if other == l {
		t.Fatal("test bug")
	}
	c.Stop(other)
	acquire("after-readmit")
	harness.WaitUntil(t, 10*time.Second, id+" to apply what the two commit", func() bool {
		return c.Node(victim).Status().AppliedIndex >= c.Node(c.Leader()).Status().CommitIndex
	})
}

// retained records what a node tells its PeerMetrics.
type retained struct {
	mu   sync.Mutex
	last []string
}

func (r *retained) RetainPeers(ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = slices.Clone(ids)
}

func (r *retained) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Each server tells its per-peer metrics the servers of each committed
// configuration, so that a removed server's replication series go.
func TestRemovedServerLeavesThePeerMetrics(t *testing.T) {
	var mu sync.Mutex
	byNode := map[string]*retained{}
	c := gossipCluster(t, 3, func(cfg *cluster.Config) {
		mu.Lock()
		defer mu.Unlock()
		r := &retained{}
		byNode[cfg.NodeID] = r
		cfg.PeerMetrics = r
	})
	l := c.Leader()
	victim := (l + 1) % 3
	id := c.Peer(victim).ID
	c.Stop(victim)
	if _, err := c.Node(l).RemoveServer(harness.Context(t, 5*time.Second), id, true); err != nil {
		t.Fatalf("remove %s with force: %v", id, err)
	}
	for i := 0; i < 3; i++ {
		if i == victim {
			continue
		}
		mu.Lock()
		r := byNode[c.Peer(i).ID]
		mu.Unlock()
		harness.WaitUntil(t, 10*time.Second, c.Peer(i).ID+" told its metrics of the configuration without "+id, func() bool {
			got := r.get()
			return len(got) == 2 && !slices.Contains(got, id)
		})
	}
}
