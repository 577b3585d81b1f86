package inproc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
)

// Options say how Start builds a cluster. The zero value connects the nodes
// by raft.InmemTransport and serves no HTTP.
type Options struct {
	// TCP connects the nodes with Raft's TCP transport on free loopback
	// ports instead of raft.InmemTransport. Isolate and Heal need
	// InmemTransport.
	TCP bool
	// Tweak, if not nil, adjusts each node's Config (on every start) just
	// before cluster.New, after the harness has set it up: a test may wrap
	// cfg.Transport, which is a *raft.InmemTransport without TCP.
	Tweak func(*cluster.Config)
	// Gossip runs memberlist on a free loopback port for every node, each
	// joining the others, as `tenure server -gossip-addr -join` does. The
	// nodes still bootstrap from the initial cluster.
	Gossip bool
	// Serve, if not nil, puts every node behind an httptest server whose
	// address is the node's HTTPAddr, and makes the server's handler each
	// time the node starts.
	Serve ServeFunc
	// FrontTLS, if not nil, makes the HTTP servers of Serve speak TLS with
	// the configuration it returns for node id (its URL is then https).
	FrontTLS func(id string) *tls.Config
}

// ServeFunc makes the HTTP handler of node n, which has just started. reg
// is the registry the node's metrics are in; logger is its Config.Logger
// (nil unless TENURE_TEST_LOG is set).
type ServeFunc func(n *cluster.Node, reg *prometheus.Registry, logger hclog.Logger) (http.Handler, error)

// Cluster is a set of in-process nodes named n1…nN that bootstrap together.
// Its methods may be called from any goroutine, except Stop, Restart,
// dialConfirm connects node from to the confirmation channel of the node
// at addr, unless either is stopped or isolated.
func (c *Cluster) dialConfirm(from int, addr raft.ServerAddress) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	to := -1
	for j, p := range c.peers {
		if raft.ServerAddress(p.RaftAddr) == addr {
			to = j
		}
	}
	if to < 0 || c.nodes[to] == nil || c.cut[from] || c.cut[to] {
		return nil, fmt.Errorf("confirmation channel to %s: unreachable", addr)
	}
	a, b := net.Pipe()
	c.pipes = append(c.pipes, confirmPipe{from: from, to: to, conn: a})
	go c.nodes[to].ServeConfirm(b)
	return a, nil
}

// closePipesLocked closes the confirmation channels from or to node i.
func (c *Cluster) closePipesLocked(i int) {
	kept := c.pipes[:0]
	for _, p := range c.pipes {
		if p.from == i || p.to == i {
			p.conn.Close()
		} else {
			kept = append(kept, p)
		}
	}
	c.pipes = kept
}

// Isolate and Heal, which belong to the test goroutine.
type Cluster struct {
	t      testing.TB
	opts   Options
	peers  []cluster.Peer
	gossip []string // gossip addresses; nil without Options.Gossip
	dirs   []string
	fronts []*Front // nil without Options.Serve

	mu    sync.Mutex
	nodes []*cluster.Node        // nil while stopped
	trans []*raft.InmemTransport // nil with TCP, and while stopped
	// Without TCP, the leadership-confirmation channel runs over pipes:
	// cut are the isolated nodes, pipes the open channels.
	cut   map[int]bool
	pipes []confirmPipe
}

// confirmPipe is one confirmation channel from node from to node to.
type confirmPipe struct {
	from, to int
	conn     net.Conn
}

// Config is the Config of node id with data dir dir, with timings fast
// enough for tests: elections in about 150ms, and a MinTTL that keeps the
// rule MinTTL ≥ 2 × ElectionTimeout. Gossip is off; set TENURE_TEST_LOG to
// see the node's debug log.
func Config(id, dir string) cluster.Config {
	cfg := cluster.DefaultConfig()
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

// Start starts n nodes that bootstrap together, each on a data dir of its
// own that outlives Stop, and shuts them down (then their HTTP servers)
// when t ends. It does not wait for a leader: see Leader.
//
// In -short mode (make test-unit) it skips t unless the cluster is one
// node on in-memory Raft: several servers, TCP or gossip make a test one
// of the slow ones that make test runs in full.
func Start(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	if testing.Short() && (n > 1 || opts.TCP || opts.Gossip) {
		t.Skipf("skipping in -short mode: starts %d servers (TCP %t, gossip %t)", n, opts.TCP, opts.Gossip)
	}
	c := &Cluster{t: t, opts: opts, nodes: make([]*cluster.Node, n), trans: make([]*raft.InmemTransport, n), cut: map[int]bool{}}
	for i := 0; i < n; i++ {
		id := "n" + strconv.Itoa(i+1)
		p := cluster.Peer{ID: id, RaftAddr: id, HTTPAddr: "127.0.0.1:1"}
		if opts.Serve != nil {
			f := &Front{}
			f.srv = httptest.NewUnstartedServer(f)
			if opts.FrontTLS != nil {
				f.srv.TLS = opts.FrontTLS(id)
				f.srv.StartTLS()
			} else {
				f.srv.Start()
			}
			t.Cleanup(f.srv.Close)
			f.URL = f.srv.URL
			f.Addr = f.srv.Listener.Addr().String()
			p.HTTPAddr = f.Addr
			c.fronts = append(c.fronts, f)
		}
		c.peers = append(c.peers, p)
	}
	// Cleanups run last first: the nodes stop before their HTTP servers.
	t.Cleanup(c.shutdownAll)
	// A port that was free when picked may be taken before its node binds
	// it, by another process's socket (an outgoing connection's ephemeral
	// port may live long): the cluster then starts again on new ports and
	// in new data dirs, which no node has written to.
	for attempt := 1; ; attempt++ {
		c.pickAddrs()
		err := c.startAll()
		if err == nil {
			return c
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("start the cluster: %v", err)
		}
		t.Logf("start the cluster: %v; starting it again on new ports", err)
		c.shutdownAll()
	}
}

// freeAddr picks a node's port (harness.FreeAddr); a variable for tests.
var freeAddr = harness.FreeAddr

// pickAddrs gives each node a new data dir and, with Options.TCP and
// Options.Gossip, new ports.
func (c *Cluster) pickAddrs() {
	c.dirs, c.gossip = nil, nil
	// Each pick was free when made, and is closed again before the next:
	// two picks may be the same port. Raft refuses a configuration that
	// names an address twice.
	used := map[string]bool{}
	pick := func() string {
		for range 100 {
			if a := freeAddr(c.t); !used[a] {
				used[a] = true
				return a
			}
		}
		c.t.Fatal("100 picks of a free port gave ports already picked")
		return ""
	}
	for i := range c.peers {
		if c.opts.TCP {
			c.peers[i].RaftAddr = pick()
		}
		if c.opts.Gossip {
			c.gossip = append(c.gossip, pick())
		}
		c.dirs = append(c.dirs, filepath.Join(c.t.TempDir(), c.peers[i].ID))
	}
}

// startAll starts every node for the first time, without waiting for a
// port that is taken.
func (c *Cluster) startAll() error {
	for i := range c.peers {
		if err := c.tryStart(i, false); err != nil {
			return err
		}
	}
	return nil
}

// Len is the number of nodes, running or not.
func (c *Cluster) Len() int { return len(c.peers) }

// Dir returns node i's data dir.
func (c *Cluster) Dir(i int) string { return c.dirs[i] }

// Peer is node i's identity and addresses.
func (c *Cluster) Peer(i int) cluster.Peer { return c.peers[i] }

// Node is node i's current run, or nil while it is stopped.
func (c *Cluster) Node(i int) *cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// GossipAddr is node i's gossip address; "" without Options.Gossip.
func (c *Cluster) GossipAddr(i int) string {
	if c.gossip == nil {
		return ""
	}
	return c.gossip[i]
}

// Front is node i's HTTP server; nil without Options.Serve.
func (c *Cluster) Front(i int) *Front {
	if c.fronts == nil {
		return nil
	}
	return c.fronts[i]
}

// Restart starts node i again on its data dir after Stop.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.start(i)
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	if err := c.tryStart(i, true); err != nil {
		c.t.Fatal(err)
	}
}

// tryStart starts node i; with wait, a port of its that another socket
// holds is tried again for a while.
func (c *Cluster) tryStart(i int, wait bool) error {
	cfg := Config(c.peers[i].ID, c.dirs[i])
	cfg.InitialCluster = c.peers
	cfg.HTTPAddr = c.peers[i].HTTPAddr
	if c.gossip != nil {
		cfg.GossipAddr = c.gossip[i]
		cfg.Join = nil
		for j, addr := range c.gossip {
			if j != i {
				cfg.Join = append(cfg.Join, addr)
			}
		}
	}
	if c.opts.TCP {
		cfg.RaftAddr = c.peers[i].RaftAddr
	} else {
		_, tr := raft.NewInmemTransport(raft.ServerAddress(c.peers[i].RaftAddr))
		cfg.Transport = tr
		cfg.ConfirmDial = func(addr raft.ServerAddress, _ time.Duration) (net.Conn, error) { return c.dialConfirm(i, addr) }
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
	var reg *prometheus.Registry
	if c.opts.Serve != nil {
		reg = prometheus.NewRegistry()
		cfg.Registerer = reg
	}
	if c.opts.Tweak != nil {
		c.opts.Tweak(&cfg)
	}
	n, err := cluster.New(cfg)
	// A port of this node that was free when the cluster started may be
	// held for a moment by another socket (an outgoing connection's
	// ephemeral port) when it starts again: try again for a while.
	for deadline := time.Now().Add(5 * time.Second); wait && err != nil && strings.Contains(err.Error(), "address already in use") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if reg != nil && cfg.Registerer == reg {
			// The failed start registered the node's metrics already.
			reg = prometheus.NewRegistry()
			cfg.Registerer = reg
		}
		n, err = cluster.New(cfg)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", cfg.NodeID, err)
	}
	c.mu.Lock()
	c.nodes[i] = n
	c.mu.Unlock()
	if c.opts.Serve != nil {
		h, err := c.opts.Serve(n, reg, cfg.Logger)
		if err != nil {
			return fmt.Errorf("HTTP handler of %s: %w", cfg.NodeID, err)
		}
		c.fronts[i].set(h)
	}
	return nil
}

// Stop shuts node i down, as a crash would, keeping its data dir. Its HTTP
// server answers 503 until Restart.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[i]
	c.nodes[i] = nil
	c.closePipesLocked(i)
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
	if f := c.Front(i); f != nil {
		f.set(nil)
	}
}

func (c *Cluster) shutdownAll() {
	for i := range c.nodes {
		c.Stop(i)
	}
}

// Isolate cuts node i off from every other node (InmemTransport only).
func (c *Cluster) Isolate(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut[i] = true
	c.closePipesLocked(i)
	for j, other := range c.trans {
		if j != i && other != nil {
			other.Disconnect(c.trans[i].LocalAddr())
			c.trans[i].Disconnect(other.LocalAddr())
		}
	}
}

// Heal reconnects node i to every other node (InmemTransport only).
func (c *Cluster) Heal(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cut, i)
	for j, other := range c.trans {
		if j != i && other != nil {
			other.Connect(c.trans[i].LocalAddr(), c.trans[i])
			c.trans[i].Connect(other.LocalAddr(), other)
		}
	}
}

// leaderTimeout bounds the wait for an established leader.
const leaderTimeout = 10 * time.Second

// Leader waits until exactly one running node is an established leader,
// and returns its index. The nodes in except are not accepted as leader
// (and not counted).
func (c *Cluster) Leader(except ...int) int {
	c.t.Helper()
	found := -1
	harness.WaitUntil(c.t, leaderTimeout, "an established leader", func() bool {
		found = c.onlyLeader(except)
		return found >= 0
	})
	return found
}

// AgreedLeader waits until exactly one running node is an established
// leader and every running node knows the leader's HTTP address, and
// returns the leader's index.
func (c *Cluster) AgreedLeader() int {
	c.t.Helper()
	found := -1
	harness.WaitUntil(c.t, leaderTimeout, "an established leader known to every node", func() bool {
		found = c.onlyLeader(nil)
		if found < 0 {
			return false
		}
		for i := range c.peers {
			if n := c.Node(i); n != nil && n.LeaderHTTPAddr() != c.peers[found].HTTPAddr {
				return false
			}
		}
		return true
	})
	return found
}

// onlyLeader is the index of the one running node outside except that is
// an established leader; -1 when there is none or more than one.
func (c *Cluster) onlyLeader(except []int) int {
	found := -1
	for i := range c.peers {
		if skip(i, except) {
			continue
		}
		if n := c.Node(i); n != nil && n.Ready() == nil {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
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

// Retryable reports errors after which a client tries again, possibly on
// another node.
func Retryable(err error) bool {
	return errors.Is(err, cluster.ErrNotLeader) || errors.Is(err, cluster.ErrNotReady) ||
		errors.Is(err, cluster.ErrLeadershipLost) || errors.Is(err, cluster.ErrShutdown) ||
		errors.Is(err, context.DeadlineExceeded)
}

// OnLeader runs f on every running, established leader until f succeeds
// or fails with an error that is not Retryable, trying again until timeout
// passes, as the client does. It returns f's last error.
func (c *Cluster) OnLeader(timeout time.Duration, f func(n *cluster.Node) error) error {
	deadline := time.Now().Add(timeout)
	for {
		var err error
		for i := range c.peers {
			n := c.Node(i)
			if n == nil || n.Ready() != nil {
				continue
			}
			if err = f(n); err == nil || !Retryable(err) {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader answered within %v: last error %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Front is a node's HTTP server. It is up from Start to the end of the test
// and hands each request to the handler of the node's current run; while
// the node is stopped it answers 503.
type Front struct {
	URL  string // http://host:port, or https:// with Options.FrontTLS
	Addr string // host:port, the node's HTTPAddr
	// Hits counts every request the server received; Inflight counts the
	// requests inside the handler now.
	Hits, Inflight atomic.Int64

	srv     *httptest.Server
	mu      sync.Mutex
	handler http.Handler
}

func (f *Front) set(h http.Handler) {
	f.mu.Lock()
	f.handler = h
	f.mu.Unlock()
}

// ServeHTTP delegates to the node's handler once it exists, so that the
// server's address can go into the node's Config before the node starts.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Hits.Add(1)
	f.Inflight.Add(1)
	defer f.Inflight.Add(-1)
	f.mu.Lock()
	h := f.handler
	f.mu.Unlock()
	if h == nil {
		http.Error(w, "node not started", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}
