package cluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// The tests of this file run real memberlist gossip on loopback next to
// Raft over TCP: who may become a voter is decided from gossip.

// gossipCluster starts n servers that bootstrap together from the initial
// cluster (so the configured size is n) and gossip with each other.
func gossipCluster(t *testing.T, n int, tweak func(*cluster.Config)) *inproc.Cluster {
	t.Helper()
	c := inproc.Start(t, n, inproc.Options{TCP: true, Gossip: true, Tweak: tweak})
	c.Leader()
	return c
}

// stopAndRemove stops server i of c and has the leader remove it with
// force, as an operator removes a server that is gone for good.
func stopAndRemove(t *testing.T, c *inproc.Cluster, i int) {
	t.Helper()
	c.Stop(i)
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		_, err := n.RemoveServer(harness.Context(t, 5*time.Second), c.Peer(i).ID, true)
		return err
	}); err != nil {
		t.Fatalf("remove %s: %v", c.Peer(i).ID, err)
	}
}

// configuration is the Raft configuration as node n sees it: id → server.
func configuration(t *testing.T, n *cluster.Node) map[string]raft.Server {
	t.Helper()
	f := cluster.RaftOf(n).GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatalf("configuration: %v", err)
	}
	out := map[string]raft.Server{}
	for _, s := range f.Configuration().Servers {
		out[string(s.ID)] = s
	}
	return out
}

// voters lists the voters of the configuration, sorted.
func voters(cfg map[string]raft.Server) []string {
	var out []string
	for id, s := range cfg {
		if s.Suffrage == raft.Voter {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// leaderConfiguration is the configuration as the current established
// leader of c sees it.
func leaderConfiguration(t *testing.T, c *inproc.Cluster) map[string]raft.Server {
	t.Helper()
	return configuration(t, c.Node(c.Leader()))
}

// forge joins the gossip at join with a member named name that announces
// meta, and makes it leave when t ends.
func forge(t *testing.T, name string, meta cluster.MemberMeta, join string) {
	t.Helper()
	b, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	inproc.Forge(t, name, b, join)
}

// nowhere is a loopback address where nothing listens.
func nowhere(t *testing.T) string {
	t.Helper()
	return harness.FreeAddr(t)
}

// joinServer starts server id on fresh loopback ports, joining the gossip
// at join with no bootstrap setting of its own (as `tenure server -join`
// alone), and shuts it down when t ends.
func joinServer(t *testing.T, id, join string, tweak func(*cluster.Config)) *cluster.Node {
	t.Helper()
	cfg := inproc.Config(id, filepath.Join(t.TempDir(), id))
	cfg.RaftAddr = harness.FreeAddr(t)
	cfg.GossipAddr = harness.FreeAddr(t)
	cfg.Join = []string{join}
	if tweak != nil {
		tweak(&cfg)
	}
	n, err := cluster.New(cfg)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() { n.Shutdown() })
	return n
}

// seesMembers waits until the leader of c lists every member named in
// names as alive.
func seesMembers(t *testing.T, c *inproc.Cluster, names ...string) {
	t.Helper()
	harness.WaitFor(t, 15*time.Second, func() error {
		alive := map[string]bool{}
		for _, m := range c.Node(c.Leader()).Members() {
			alive[m.Name] = m.Status == "alive"
		}
		for _, name := range names {
			if !alive[name] {
				return fmt.Errorf("the leader does not see %s alive on gossip", name)
			}
		}
		return nil
	})
}

// Forged gossip members that announce role=server, with Raft addresses
// where nothing listens, never become voters: the cluster keeps its three
// voters and its quorum, and still writes after its leader is killed.
// (Before admission and promotion existed, three such members made six
// voters of which three were alive, and the cluster lost its quorum for
// good.) Members that do not name the cluster are not even admitted;
// members that know its name are at most non-voters, which do not count
// for the quorum.
func TestForgedServersNeverBecomeVoters(t *testing.T) {
	tests := []struct {
		name        string
		clusterName string
		admitted    bool // as non-voters
	}{
		{name: "no cluster name", clusterName: "", admitted: false},
		{name: "another cluster's name", clusterName: "staging", admitted: false},
		{name: "this cluster's name", clusterName: "tenure", admitted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A cluster of size four with three voters: the leader would
			// promote a healthy non-voter at once, and the three voters
			// keep a quorum when the leader is killed.
			c := gossipCluster(t, 4, func(cfg *cluster.Config) { cfg.ServerStabilization = 0 })
			victim := (c.Leader() + 1) % 4
			// Forced: three voters are fewer than the configured four.
			stopAndRemove(t, c, victim)
			var names []string
			for k := 1; k <= 3; k++ {
				name := "forged-" + strconv.Itoa(k)
				names = append(names, name)
				forge(t, name, cluster.MemberMeta{Role: "server", ID: name, RaftAddr: nowhere(t), HTTPAddr: nowhere(t), ClusterName: tt.clusterName}, c.GossipAddr((victim+k)%4))
			}
			seesMembers(t, c, names...)
			var want []string
			for i := 0; i < 4; i++ {
				if i != victim {
					want = append(want, c.Peer(i).ID)
				}
			}
			check := func() error {
				cfg := leaderConfiguration(t, c)
				if got := strings.Join(voters(cfg), " "); got != strings.Join(want, " ") {
					return fmt.Errorf("voters %s, want %s", got, strings.Join(want, " "))
				}
				for _, name := range names {
					if _, ok := cfg[name]; ok && !tt.admitted {
						return fmt.Errorf("%s is in the configuration", name)
					}
				}
				return nil
			}
			harness.Holds(t, 5*time.Second, check)
			if tt.admitted {
				cfg := leaderConfiguration(t, c)
				for _, name := range names {
					if s, ok := cfg[name]; !ok || s.Suffrage != raft.Nonvoter {
						t.Errorf("%s: got %+v (listed %v), want a non-voter", name, s, ok)
					}
				}
			}
			old := c.Leader()
			c.Stop(old)
			c.Leader(old, victim)
			acquire(t, c, "after-leader-kill", "h", time.Minute)
		})
	}
}

// A server of another cluster that joins this cluster's gossip (a staging
// server started with a production -join) never changes the Raft
// configuration, even while it waits to bootstrap a cluster of its own
// size; the leader says why, once per member.
func TestServerOfAnotherClusterNeverAdded(t *testing.T) {
	logs := &harness.Buffer{}
	c := gossipCluster(t, 3, func(cfg *cluster.Config) {
		cfg.ServerStabilization = 0
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: cfg.NodeID, Output: logs, Level: hclog.Info})
	})
	before := leaderConfiguration(t, c)
	staging := func(cfg *cluster.Config) { cfg.ClusterName = "staging" }
	joinServer(t, "staging-1", c.GossipAddr(0), staging)
	joinServer(t, "staging-2", c.GossipAddr(1), func(cfg *cluster.Config) {
		staging(cfg)
		cfg.BootstrapExpect = 3
	})
	seesMembers(t, c, "staging-1", "staging-2")
	harness.Holds(t, 5*time.Second, func() error {
		after := leaderConfiguration(t, c)
		if len(after) != len(before) {
			return fmt.Errorf("configuration %v, want %v", after, before)
		}
		for id, s := range before {
			if after[id] != s {
				return fmt.Errorf("%s is %+v, want %+v", id, after[id], s)
			}
		}
		return nil
	})
	leader := c.Peer(c.Leader()).ID
	for _, member := range []string{"staging-1", "staging-2"} {
		n := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, leader+".gossip: server not admitted to raft") && strings.Contains(line, "member="+member) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the leader %s logged %d times that it did not admit %s, want once:\n%s", leader, n, member, logs.String())
		}
	}
}

// A new server joins as a non-voter and is promoted once it has caught up
// and stayed so for the stabilization time, while the cluster has fewer
// voters than its configured size; the voters never exceed that size
// unless an operator promotes a server. A forged member that knows the
// cluster's name is admitted as a non-voter but never promoted: it never
// answers the leader.
func TestNewServerPromotedOnlyUpToTheConfiguredSize(t *testing.T) {
	const stabilization = 2 * time.Second
	c := gossipCluster(t, 3, func(cfg *cluster.Config) { cfg.ServerStabilization = stabilization })
	gone := (c.Leader() + 1) % 3
	// Forced: two voters are fewer than the configured three.
	stopAndRemove(t, c, gone)
	join := c.GossipAddr((gone + 1) % 3)
	forge(t, "forged", cluster.MemberMeta{Role: "server", ID: "forged", RaftAddr: nowhere(t), HTTPAddr: nowhere(t), ClusterName: "tenure"}, join)

	// At most three voters, at any moment of the test.
	atMost := func(n int) func() error {
		return func() error {
			if got := voters(leaderConfiguration(t, c)); len(got) > n {
				return fmt.Errorf("%d voters %v, want at most %d", len(got), got, n)
			}
			return nil
		}
	}
	suffrage := func(id string) (raft.ServerSuffrage, bool) {
		s, ok := leaderConfiguration(t, c)[id]
		return s.Suffrage, ok
	}

	started := time.Now()
	joinServer(t, "n4", join, nil)
	sawNonvoter := false
	harness.WaitFor(t, 30*time.Second, func() error {
		if err := atMost(3)(); err != nil {
			t.Fatal(err)
		}
		s, ok := suffrage("n4")
		sawNonvoter = sawNonvoter || (ok && s == raft.Nonvoter)
		if !ok || s != raft.Voter {
			return fmt.Errorf("n4 is %v (listed %v), want a voter", s, ok)
		}
		return nil
	})
	if took := time.Since(started); !sawNonvoter || took < stabilization {
		t.Errorf("n4 became a voter %v after it started (seen as non-voter first: %v), want a non-voter first, for at least %v", took, sawNonvoter, stabilization)
	}
	if s, ok := suffrage("forged"); !ok || s != raft.Nonvoter {
		t.Errorf("forged member: %v (listed %v), want a non-voter", s, ok)
	}

	// The cluster has its three voters: a fifth server stays a non-voter.
	joinServer(t, "n5", join, nil)
	harness.WaitFor(t, 15*time.Second, func() error {
		if s, ok := suffrage("n5"); !ok || s != raft.Nonvoter {
			return fmt.Errorf("n5 is %v (listed %v), want a non-voter", s, ok)
		}
		return nil
	})
	harness.Holds(t, 2*stabilization, atMost(3))

	// An operator may promote beyond the size, but only a server that
	// answers the leader.
	promote := func(id string) (int, error) {
		var voters int
		err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
			var err error
			voters, err = n.PromoteServer(harness.Context(t, 5*time.Second), id)
			return err
		})
		return voters, err
	}
	if _, err := promote("forged"); !errors.Is(err, cluster.ErrNotCaughtUp) {
		t.Errorf("promote the forged member: %v, want ErrNotCaughtUp", err)
	}
	if _, err := promote("nobody"); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("promote an unknown server: %v, want ErrNotFound", err)
	}
	harness.WaitFor(t, 10*time.Second, func() error {
		n, err := promote("n5")
		if err != nil {
			return err
		}
		if n != 4 {
			t.Fatalf("promote n5: %d voters, want 4", n)
		}
		return nil
	})
	if s, _ := suffrage("n5"); s != raft.Voter {
		t.Errorf("n5 after the promotion: %v, want a voter", s)
	}
	if n, err := promote("n5"); err != nil || n != 4 {
		t.Errorf("promote n5 again: %d voters, %v; want 4, nil", n, err)
	}
	acquire(t, c, "after-promotions", "h", time.Minute)
}

// A voter that has been dead for the cleanup threshold is removed while
// enough voters remain: two of five go, a third does not (a cluster of five
// keeps three voters). A dead non-voter is removed freely.
func TestDeadServersRemovedWhileEnoughVotersRemain(t *testing.T) {
	const cleanup = 2 * time.Second
	c := gossipCluster(t, 5, func(cfg *cluster.Config) { cfg.DeadServerCleanup = cleanup })
	spare := joinServer(t, "spare", c.GossipAddr(0), func(cfg *cluster.Config) {
		cfg.NonVoter = true
		cfg.DeadServerCleanup = cleanup
	})
	harness.WaitFor(t, 15*time.Second, func() error {
		if s, ok := leaderConfiguration(t, c)["spare"]; !ok || s.Suffrage != raft.Nonvoter {
			return fmt.Errorf("spare is %+v (listed %v), want a non-voter", s, ok)
		}
		return nil
	})

	l := c.Leader()
	var followers []int
	for i := 0; i < 5; i++ {
		if i != l {
			followers = append(followers, i)
		}
	}
	stopped := time.Now()
	c.Stop(followers[0])
	c.Stop(followers[1])
	spare.Shutdown()
	var want []string
	for i := 0; i < 5; i++ {
		if i != followers[0] && i != followers[1] {
			want = append(want, c.Peer(i).ID)
		}
	}
	harness.WaitFor(t, 45*time.Second, func() error {
		cfg := leaderConfiguration(t, c)
		if got := voters(cfg); strings.Join(got, " ") != strings.Join(want, " ") || len(cfg) != 3 {
			return fmt.Errorf("configuration %v, want the voters %v only", cfg, want)
		}
		return nil
	})
	if took := time.Since(stopped); took < cleanup {
		t.Errorf("dead servers removed %v after they stopped, want at least %v", took, cleanup)
	}

	// Three voters left of a cluster of five: the next dead one stays.
	l = c.Leader()
	third := -1
	for _, i := range followers[2:] {
		if i != l {
			third = i
		}
	}
	c.Stop(third)
	harness.Holds(t, 3*cleanup+10*time.Second, func() error {
		if got := voters(leaderConfiguration(t, c)); len(got) != 3 {
			return fmt.Errorf("voters %v, want three: a cluster of five keeps a majority of five", got)
		}
		return nil
	})
	acquire(t, c, "after-cleanup", "h", time.Minute)
}

// A gossip member that claims the id of a live server at another Raft
// address never rewrites that server's address: the leader still has
// contact with the server where the configuration says it is.
func TestAliveServerAddressNotRewritten(t *testing.T) {
	c := gossipCluster(t, 3, nil)
	l := c.Leader()
	victim := (l + 1) % 3
	id := c.Peer(victim).ID
	want := c.Peer(victim).RaftAddr
	forge(t, "impostor", cluster.MemberMeta{Role: "server", ID: id, RaftAddr: nowhere(t), HTTPAddr: nowhere(t), ClusterName: "tenure"}, c.GossipAddr(l))
	harness.WaitUntil(t, 10*time.Second, "the leader to see the impostor", func() bool {
		for _, m := range c.Node(c.Leader()).Members() {
			if m.Name == "impostor" && m.Status == "alive" {
				return true
			}
		}
		return false
	})
	harness.Holds(t, 5*time.Second, func() error {
		if got := leaderConfiguration(t, c)[id]; string(got.Address) != want || got.Suffrage != raft.Voter {
			return fmt.Errorf("%s is %s at %s in the configuration, want a voter at %s", id, got.Suffrage, got.Address, want)
		}
		return nil
	})
}
