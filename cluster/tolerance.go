package cluster

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/views"
)

// judgeHealth marks each server of s healthy or not, as this node can
// tell, and sets s.FailureTolerance (views.JudgeHealth).
func (n *Node) judgeHealth(s *Status) {
	views.JudgeHealth(s, views.Judge{Self: n.cfg.NodeID, Recent: rulesOf(n.cfg).Recent,
		LeaderSaw: func(id, addr string) (time.Time, bool) {
			ct, ok := n.contacts.Get(raft.ServerID(id), raft.ServerAddress(addr))
			return ct.At, ok
		},
		Alive: func(id string) bool { return n.gossip != nil && n.gossip.ServerAlive(id) },
	}, time.Now())
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
	shape := views.HealthShape(s)
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
