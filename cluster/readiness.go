package cluster

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/raftstore"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
	"github.com/tenure-io/tenure/cluster/internal/views"
)

// NodeHealth is what this node knows of its own ability to serve
// (views.NodeHealth).
type NodeHealth = views.NodeHealth

// Health reports this node's lag and disk health, and whether either
// makes it not ready (Config.ReadyMaxLagEntries, ReadyMaxLagTime). It
// contacts no other node.
func (n *Node) Health() NodeHealth {
	return healthOf(n.lag.Lag(n.raft.AppliedIndex(), n.raft.CommitIndex()), n.disk.State(), n.snapDisk.State(),
		time.Now(), n.cfg.ReadyMaxLagEntries, n.cfg.ReadyMaxLagTime)
}

// healthOf judges lag and disk against the bounds: the log and stable
// stores first (a node that cannot write falls behind for that reason),
// then the snapshots, then the entries, then the time behind. A failed
// snapshot counts until a snapshot succeeds, with no hold: snapshots are
// rare, and Raft retries a failed one at every snapshot interval.
func healthOf(lag rounds.Lag, disk, snap raftstore.State, now time.Time, maxEntries uint64, maxTime time.Duration) NodeHealth {
	h := NodeHealth{
		LeaderCommit: lag.LeaderCommit, AppliedIndex: lag.Applied,
		BehindEntries: lag.Entries, BehindFor: lag.For,
		DiskWriteErrors: disk.Failures, LastDiskErrorAt: disk.LastErrAt,
		SnapshotWriteErrors: snap.Failures, LastSnapshotErrorAt: snap.LastErrAt,
		SnapshotFailing: snap.Failing(now, 0),
	}
	if disk.LastErr != nil {
		h.LastDiskError = disk.LastErr.Error()
	}
	if snap.LastErr != nil {
		h.LastSnapshotError = snap.LastErr.Error()
	}
	switch {
	case disk.Failing(now, maxTime):
		h.Problem = fmt.Sprintf("raft log or stable store write failed %v ago (%d failed writes): %v",
			now.Sub(disk.LastErrAt).Round(time.Millisecond), disk.Failures, disk.LastErr)
	case h.SnapshotFailing:
		h.Problem = fmt.Sprintf("snapshot write failed %v ago and none succeeded since (%d failed snapshots): %v",
			now.Sub(snap.LastErrAt).Round(time.Millisecond), snap.Failures, snap.LastErr)
	case lag.Entries > maxEntries:
		h.Problem = fmt.Sprintf("applied index %d is %d entries behind the leader's commit index %d (ready-max-lag-entries %d)",
			lag.Applied, lag.Entries, lag.LeaderCommit, maxEntries)
	case lag.For > maxTime:
		h.Problem = fmt.Sprintf("applied index %d has been behind the leader's commit index %d for %v (ready-max-lag-time %v)",
			lag.Applied, lag.LeaderCommit, lag.For.Round(time.Millisecond), maxTime)
	}
	return h
}

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
