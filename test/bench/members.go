package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/tenure-io/tenure/test/harness"
)

// member is one server of a cluster under test.
type member interface {
	process() *proc
}

// startServer starts the server process called name (bin with args, its
// output appended to log), tracked by ps so that it is killed at the end.
func startServer(ps *procs, name, bin string, args []string, log string) (*proc, error) {
	p := &proc{name: name, bin: bin, args: args, log: log}
	ps.add(p)
	return p, p.start()
}

// waitRunning polls the members of ms until timeout: each poll makes a
// check with newCheck (so that it may compare one member with the ones
// before) and runs it on every running member in turn; the wait is over
// when a poll finds no error. A member whose process exited fails the
// poll with the tail of its log.
func waitRunning[M member](timeout time.Duration, ms []M, newCheck func() func(M) error) error {
	return harness.Poller{Interval: 50 * time.Millisecond}.Poll(timeout, func() error {
		check := newCheck()
		for _, m := range ms {
			p := m.process()
			if !p.running() {
				if p.pid() != 0 {
					return fmt.Errorf("%s exited:\n%s", p.name, p.tail())
				}
				continue
			}
			if err := check(m); err != nil {
				return err
			}
		}
		return nil
	})
}

// runningAddrs returns addr of each member of ms whose process runs.
func runningAddrs[M member](ms []M, addr func(M) string) []string {
	var a []string
	for _, m := range ms {
		if m.process().running() {
			a = append(a, addr(m))
		}
	}
	return a
}

// leaderOf returns the first running member of ms that leads, as leads
// (asked of running members only) says. system names the cluster in the
// error.
func leaderOf[M member](system string, ms []M, leads func(M) bool) (M, error) {
	for _, m := range ms {
		if m.process().running() && leads(m) {
			return m, nil
		}
	}
	var none M
	return none, fmt.Errorf("%s: no leader", system)
}

// killLeader kills the leader of ms with SIGKILL and returns a function
// that restarts it on its data dir and waits until ready says the cluster
// is ready again.
func killLeader[M member](system string, ms []M, leads func(M) bool, ready func(time.Duration) error) (restart func() error, err error) {
	m, err := leaderOf(system, ms, leads)
	if err != nil {
		return nil, err
	}
	p := m.process()
	p.kill()
	return func() error {
		if err := p.start(); err != nil {
			return err
		}
		return ready(60 * time.Second)
	}, nil
}

// followerPID is the process id of a running member of ms that does not
// lead.
func followerPID[M member](system string, ms []M, leads func(M) bool) (int, error) {
	l, err := leaderOf(system, ms, leads)
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		if p := m.process(); p != l.process() && p.running() {
			return p.pid(), nil
		}
	}
	return 0, errors.New(system + ": no follower")
}
