package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Etcd is a three-node etcd cluster (the distribution's etcd-server) on
// loopback, each member with its own data dir under Dir, with etcd's
// default timings.
type Etcd struct {
	Bin string
	Dir string

	members []*etcdMember
}

type etcdMember struct {
	name   string
	client string
	p      *proc
}

func (e *Etcd) Name() string { return "etcd" }

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
	return clientv3.New(clientv3.Config{
		Endpoints:   e.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
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
