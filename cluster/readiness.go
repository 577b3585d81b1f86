package cluster

import (
	"fmt"
	"time"

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
