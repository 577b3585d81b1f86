package cluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// judgeHealth marks each server of s healthy or not, as this node can
// tell, and sets s.FailureTolerance (see Status). The leader judges the
// others by their answers to Raft within twice the heartbeat timeout; a
// follower judges the leader by its own last contact, within the same
// time, and the other servers by gossip. A node judges itself by its
// disk and lag (Health).
func (n *Node) judgeHealth(s *Status) {
	recent := rulesOf(n.cfg).Recent
	voters, healthy := 0, 0
	for i := range s.Servers {
		srv := &s.Servers[i]
		switch {
		case srv.ID == n.cfg.NodeID:
			srv.Healthy = s.Health.Problem == ""
		case s.Role == "leader":
			ct, ok := n.contacts.Get(raft.ServerID(srv.ID), raft.ServerAddress(srv.RaftAddr))
			srv.Healthy = ok && time.Since(ct.At) <= recent
		case srv.Leader:
			srv.Healthy = s.LastContact >= 0 && s.LastContact <= recent
		default:
			srv.Healthy = n.gossip != nil && n.gossip.ServerAlive(srv.ID)
		}
		if srv.Voter {
			voters++
			if srv.Healthy {
				healthy++
			}
		}
	}
	s.FailureTolerance = 0
	if s.LeaderID != "" {
		s.FailureTolerance = max(0, healthy-(voters/2+1))
	}
}

// healthShape is what of s a change of health shows in: the failure
// tolerance and each server's health.
func healthShape(s Status) string {
	var b strings.Builder
	fmt.Fprint(&b, s.FailureTolerance)
	for _, srv := range s.Servers {
		fmt.Fprintf(&b, " %s=%t", srv.ID, srv.Healthy)
	}
	return b.String()
}

// watchHealthLoop runs watchHealth every half of Recent until shutdown.
func (n *Node) watchHealthLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(rulesOf(n.cfg).Recent / 2)
	defer tick.Stop()
	var last string
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-tick.C:
			n.watchHealth(&last)
		}
	}
}

// watchHealth looks at the servers' health every tick: health ages with
// time, which nothing announces. On a change it wakes the status waiters
// and, on the leader, logs the new failure tolerance, naming the servers
// that do not answer.
func (n *Node) watchHealth(last *string) {
	s := n.Status()
	shape := healthShape(s)
	if shape == *last {
		return
	}
	first := *last == ""
	*last = shape
	n.statusChanged.fire()
	if s.Role != "leader" || first && s.FailureTolerance > 0 {
		return
	}
	var down []string
	for _, srv := range s.Servers {
		if !srv.Healthy {
			down = append(down, srv.ID)
		}
	}
	if s.FailureTolerance == 0 {
		n.log.Warn("failure tolerance 0: one more voter that fails stops every write; bring the servers that do not answer back, or add a server (docs/operations.md)",
			"unhealthy", down, "servers", len(s.Servers))
		return
	}
	n.log.Info("failure tolerance", "voters_that_may_fail", s.FailureTolerance, "unhealthy", down)
}
