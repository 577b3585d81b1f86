package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Etcd is a three-node etcd cluster on loopback, each member with its own
// data dir under Dir, at etcd's default timings unless HeartbeatMS and
// ElectionMS are set.
type Etcd struct {
	Bin string
	Dir string
	// Label names this cluster and its configuration in the results
	// ("etcd 3.6.16, clients on the leader's endpoint"); it also keys what
	// runs keep of it (populations, the bulk holders' leases).
	Label string
	// HeartbeatMS and ElectionMS, when not 0, are etcd's
	// --heartbeat-interval and --election-timeout.
	HeartbeatMS, ElectionMS int
	// LeaderOnly gives the workloads' clients the leader's endpoint alone
	// (as tenure's client follows its leader); otherwise every member's,
	// and clientv3 spreads them over the members, which forward writes
	// and linearizable reads to the leader.
	LeaderOnly bool
	// Conns, when positive, is how many clients (gRPC connections) the
	// clients of one run share, as etcd's own benchmark tool does with
	// --conns; 0 gives each client its own.
	Conns int

	members []*etcdMember
}

type etcdMember struct {
	name   string
	client string
	p      *proc
}

func (e *Etcd) Name() string {
	if e.Label == "" {
		return "etcd"
	}
	return e.Label
}

// Start starts three members and waits until each has a leader.
func (e *Etcd) Start(ps *procs) error {
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	var initial []string
	for i := 0; i < 3; i++ {
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("e%d", i+1)
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		m := &etcdMember{name: name, client: clientURL}
		args := []string{
			"--name", name,
			"--data-dir", filepath.Join(e.Dir, name),
			"--listen-client-urls", clientURL,
			"--advertise-client-urls", clientURL,
			"--listen-peer-urls", peerURL,
			"--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "bench",
			"--log-level", "warn",
			"--logger", "zap",
		}
		if e.HeartbeatMS > 0 {
			args = append(args, "--heartbeat-interval", strconv.Itoa(e.HeartbeatMS), "--election-timeout", strconv.Itoa(e.ElectionMS))
		}
		if m.p, err = startServer(ps, "etcd "+name, e.Bin, args, filepath.Join(e.Dir, name+".log")); err != nil {
			return err
		}
		e.members = append(e.members, m)
	}
	return e.WaitReady(60 * time.Second)
}

// Endpoints are the client URLs of the running members.
func (e *Etcd) Endpoints() []string {
	return runningAddrs(e.members, func(m *etcdMember) string { return m.client })
}

// Client returns a client of every running member.
func (e *Etcd) Client() (*clientv3.Client, error) {
	return e.clientOf(e.Endpoints())
}

// LoadClient returns a client for a workload: of the leader alone with
// LeaderOnly, else of every running member.
func (e *Etcd) LoadClient() (*clientv3.Client, error) {
	if !e.LeaderOnly {
		return e.Client()
	}
	l, err := leaderOf("etcd", e.members, e.leads)
	if err != nil {
		return nil, err
	}
	return e.clientOf([]string{l.client})
}

func (e *Etcd) clientOf(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// Stop kills the members and removes their data.
func (e *Etcd) Stop() error {
	for _, m := range e.members {
		m.p.kill()
	}
	e.members = nil
	return os.RemoveAll(e.Dir)
}

// EtcdVersion is what `bin --version` says of its version ("3.6.16").
func EtcdVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s --version names no version: %q", bin, out)
}

// memberStatus returns the member's id and the leader it knows.
func (e *Etcd) memberStatus(m *etcdMember) (id, leader uint64, err error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.client}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.Status(ctx, m.client)
	if err != nil {
		return 0, 0, err
	}
	return st.Header.MemberId, st.Leader, nil
}

// WaitReady waits until every running member names the same leader.
func (e *Etcd) WaitReady(timeout time.Duration) error {
	return waitRunning(timeout, e.members, func() func(m *etcdMember) error {
		var leader uint64
		return func(m *etcdMember) error {
			_, l, err := e.memberStatus(m)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if l == 0 || (leader != 0 && l != leader) {
				return fmt.Errorf("%s: no agreed leader", m.name)
			}
			leader = l
			return nil
		}
	})
}

// leads says whether m is the leader, as its own status says.
func (e *Etcd) leads(m *etcdMember) bool {
	id, l, err := e.memberStatus(m)
	return err == nil && id == l
}

// KillLeader kills the leader with SIGKILL and returns a function that
// restarts it on its data dir.
func (e *Etcd) KillLeader() (restart func() error, err error) {
	return killLeader("etcd", e.members, e.leads, e.WaitReady)
}

// FollowerPID is the process id of a running follower.
func (e *Etcd) FollowerPID() (int, error) {
	return followerPID("etcd", e.members, e.leads)
}

func (m *etcdMember) process() *proc { return m.p }
