package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// testCluster is an in-process cluster of Nodes, connected either by
// raft.InmemTransport (which can partition them) or by real TCP on loopback.
type testCluster struct {
	t     testing.TB
	tcp   bool
	peers []Peer
	dirs  []string
	mu    sync.Mutex
	nodes []*Node
	trans []*raft.InmemTransport
	tweak func(*Config)
}

// Fast timings for tests; MinTTL keeps the 2 × election timeout rule.
func testConfig(id, dir string) Config {
	cfg := DefaultConfig()
	cfg.NodeID = id
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:1"
	cfg.GossipAddr = ""
	cfg.HeartbeatTimeout = 150 * time.Millisecond
	cfg.ElectionTimeout = 150 * time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	cfg.CommitTimeout = 5 * time.Millisecond
	cfg.MinTTL = 300 * time.Millisecond
	if os.Getenv("TENURE_TEST_LOG") != "" {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Debug})
	}
	return cfg
}

// newTestCluster starts n nodes; tweak, if not nil, adjusts each Config.
func newTestCluster(t testing.TB, n int, tcp bool, tweak func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, tcp: tcp, tweak: tweak, nodes: make([]*Node, n), trans: make([]*raft.InmemTransport, n)}
	for i := 0; i < n; i++ {
		id := "n" + strconv.Itoa(i+1)
		addr := id
		if tcp {
			addr = freePort(t)
		}
		c.peers = append(c.peers, Peer{ID: id, RaftAddr: addr, HTTPAddr: "127.0.0.1:1"})
		c.dirs = append(c.dirs, filepath.Join(t.TempDir(), id))
	}
	for i := 0; i < n; i++ {
		c.start(i)
	}
	t.Cleanup(c.shutdownAll)
	return c
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start (re)starts node i on its data dir.
func (c *testCluster) start(i int) {
	c.t.Helper()
	cfg := testConfig(c.peers[i].ID, c.dirs[i])
	cfg.InitialCluster = c.peers
	if c.tcp {
		cfg.RaftAddr = c.peers[i].RaftAddr
	} else {
		_, tr := raft.NewInmemTransport(raft.ServerAddress(c.peers[i].RaftAddr))
		cfg.Transport = tr
		c.mu.Lock()
		c.trans[i] = tr
		for j, other := range c.trans {
			if j != i && other != nil && c.nodes[j] != nil {
				tr.Connect(other.LocalAddr(), other)
				other.Connect(tr.LocalAddr(), tr)
			}
		}
		c.mu.Unlock()
	}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", cfg.NodeID, err)
	}
	c.mu.Lock()
	c.nodes[i] = n
	c.mu.Unlock()
}

// stop shuts node i down, as a crash would, keeping its data dir.
func (c *testCluster) stop(i int) {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[i]
	c.nodes[i] = nil
	if tr := c.trans[i]; tr != nil {
		for _, other := range c.trans {
			if other != nil && other != tr {
				other.Disconnect(tr.LocalAddr())
			}
		}
		tr.DisconnectAll()
		c.trans[i] = nil
	}
	c.mu.Unlock()
	if n != nil {
		n.Shutdown()
	}
}

func (c *testCluster) shutdownAll() {
	for i := range c.nodes {
		c.stop(i)
	}
}

func (c *testCluster) node(i int) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// isolate cuts node i off from every other node (InmemTransport only).
func (c *testCluster) isolate(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, other := range c.trans {
		if j != i && other != nil {
			other.Disconnect(c.trans[i].LocalAddr())
			c.trans[i].Disconnect(other.LocalAddr())
		}
	}
}

// heal reconnects node i to every other node.
func (c *testCluster) heal(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, other := range c.trans {
		if j != i && other != nil {
			other.Connect(c.trans[i].LocalAddr(), c.trans[i])
			c.trans[i].Connect(other.LocalAddr(), other)
		}
	}
}

// leader waits until exactly one running node is an established leader, and
// returns its index. With except, that node is not accepted.
func (c *testCluster) leader(except ...int) int {
	c.t.Helper()
	found := -1
	waitFor(c.t, 10*time.Second, "an established leader", func() bool {
		found = -1
		for i := range c.nodes {
			if skip(i, except) {
				continue
			}
			if n := c.node(i); n != nil && n.Ready() == nil {
				if found >= 0 {
					return false
				}
				found = i
			}
		}
		return found >= 0
	})
	return found
}

func skip(i int, except []int) bool {
	for _, e := range except {
		if e == i {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// retryable reports errors after which a client tries again (possibly on
// another node).
func retryable(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNotReady) ||
		errors.Is(err, ErrLeadershipLost) || errors.Is(err, ErrShutdown) ||
		errors.Is(err, context.DeadlineExceeded)
}

// onLeader runs f on the current leader, retrying on retryable errors until
// timeout, as the client does.
func (c *testCluster) onLeader(timeout time.Duration, f func(n *Node) error) error {
	deadline := time.Now().Add(timeout)
	for {
		var err error
		for i := range c.nodes {
			n := c.node(i)
			if n == nil || n.Ready() != nil {
				continue
			}
			if err = f(n); err == nil || !retryable(err) {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader answered within %v: last error %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
