package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
)

// Tenure is a three-node tenure cluster of `tenure server` processes on
// loopback, each with its own data dir under Dir.
type Tenure struct {
	Bin   string
	Dir   string
	Extra []string // extra server flags
	// Conns, when positive, is how many client.Clients the clients of a
	// load run share, round robin (as Etcd.Conns); 0 gives each its own.
	// NoStream turns the Go client's request stream off.
	Conns    int
	NoStream bool

	nodes []*tenureNode
	procs *procs
}

type tenureNode struct {
	id   string
	http string
	p    *proc
}

func (t *Tenure) Name() string { return "tenure" }

// Start starts three servers and waits until every one knows the leader.
func (t *Tenure) Start(ps *procs) error {
	t.procs = ps
	ports, err := freePorts(9)
	if err != nil {
		return err
	}
	var gossip []string
	for i := 0; i < 3; i++ {
		gossip = append(gossip, fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
	}
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("t%d", i+1)
		var join []string
		for j, g := range gossip {
			if j != i {
				join = append(join, g)
			}
		}
		n := &tenureNode{id: id, http: fmt.Sprintf("127.0.0.1:%d", ports[3*i])}
		args := append([]string{"server",
			"-node-id", id,
			"-data-dir", filepath.Join(t.Dir, id),
			"-http-addr", n.http,
			"-raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
			"-gossip-addr", gossip[i],
			"-bootstrap-expect", "3",
			"-join", strings.Join(join, ","),
			"-log-level", "warn",
		}, t.Extra...)
		if n.p, err = startServer(ps, "tenure "+id, t.Bin, args, filepath.Join(t.Dir, id+".log")); err != nil {
			return err
		}
		t.nodes = append(t.nodes, n)
	}
	return t.WaitReady(60 * time.Second)
}

// Stop kills the servers and removes their data.
func (t *Tenure) Stop() error {
	for _, n := range t.nodes {
		n.p.kill()
	}
	t.nodes = nil
	return os.RemoveAll(t.Dir)
}

// Addrs are the HTTP addresses of the running servers.
func (t *Tenure) Addrs() []string {
	return runningAddrs(t.nodes, func(n *tenureNode) string { return n.http })
}

// Client returns a client of every running server, without retries
// unless retry is set (a benchmark counts every failure).
func (t *Tenure) Client(retry bool) (*client.Client, error) {
	cfg := &client.Config{
		Addresses: t.Addrs(), Timeout: 10 * time.Second,
		RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 200 * time.Millisecond,
		DisableStream: t.NoStream,
	}
	if retry {
		cfg.RetryMax = 20
	}
	return client.New(cfg)
}

func (t *Tenure) status(n *tenureNode) (*client.NodeStatus, error) {
	c, err := client.New(&client.Config{Addresses: []string{n.http}, Timeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, _, err := c.Status(ctx)
	return st, err
}

// WaitReady waits until every running server names the same leader and
// the leader is established (serves writes).
func (t *Tenure) WaitReady(timeout time.Duration) error {
	return waitRunning(timeout, t.nodes, func() func(n *tenureNode) error {
		leader := ""
		return func(n *tenureNode) error {
			st, err := t.status(n)
			if err != nil {
				return fmt.Errorf("%s: %w", n.id, err)
			}
			if st.LeaderID == "" || st.NotReady != "" {
				return fmt.Errorf("%s: no leader known, or not ready (%s)", n.id, st.NotReady)
			}
			if st.Role == "leader" && !st.Ready {
				return fmt.Errorf("%s: leader not established yet", n.id)
			}
			if leader != "" && st.LeaderID != leader {
				return fmt.Errorf("%s: leader %s, another says %s", n.id, st.LeaderID, leader)
			}
			leader = st.LeaderID
			return nil
		}
	})
}

// leads says whether n is the leader, as its own status says.
func (t *Tenure) leads(n *tenureNode) bool {
	st, err := t.status(n)
	return err == nil && st.Role == "leader"
}

// KillLeader kills the leader with SIGKILL and returns a function that
// restarts it on its data dir.
func (t *Tenure) KillLeader() (restart func() error, err error) {
	return killLeader("tenure", t.nodes, t.leads, t.WaitReady)
}

// FollowerPID is the process id of a running follower.
func (t *Tenure) FollowerPID() (int, error) {
	return followerPID("tenure", t.nodes, t.leads)
}

func (n *tenureNode) process() *proc { return n.p }
