package views

import (
	"strconv"
	"time"
)

// Server is one member of the Raft configuration.
type Server struct {
	ID       string
	RaftAddr string
	HTTPAddr string
	Voter    bool
	Leader   bool
	// Healthy: the server answers, as this node can tell (Status's
	// FailureTolerance says how).
	Healthy bool
}

// Status is this node's view of the cluster.
type Status struct {
	NodeID         string
	ClusterID      string // "" until the first leader named the cluster
	Role           string // leader, follower, candidate, shutdown
	Ready          bool   // an established leader
	LeaderID       string
	LeaderHTTPAddr string
	Term           uint64
	LastLogIndex   uint64
	CommitIndex    uint64
	AppliedIndex   uint64
	LastToken      uint64
	LastContact    time.Duration // since the leader was last heard; 0 on the leader
	Servers        []Server
	// FailureTolerance is how many more voters may fail before the
	// cluster can commit nothing: the healthy voters less a quorum of all
	// voters, never below 0; 0 with no leader. The leader judges a server
	// healthy when it answered Raft lately; a follower judges the leader
	// by its last contact and the other servers by gossip (alive, and
	// proved a member of the cluster); a node judges itself by Health.
	FailureTolerance int
	// Health is this node's lag and disk health (Node.Health).
	Health NodeHealth
}

// NodeHealth is what this node knows of its own ability to serve: how far
// its applied state trails the leader's commit index, and whether its disk
// takes writes (of the Raft log and stable stores, and of snapshots). A
// node with a Problem must not be counted on: it answers stale reads from
// old state, and as a voter it adds no fault tolerance.
type NodeHealth struct {
	// Problem says why this node is not ready ("" when it is, as far as
	// the disk and the lag go; leadership is judged elsewhere).
	Problem string
	// LeaderCommit is the highest commit index this node knows of (its
	// own when it leads); AppliedIndex is its applied index.
	LeaderCommit, AppliedIndex uint64
	// BehindEntries is LeaderCommit − AppliedIndex (0 when caught up);
	// BehindFor is how long AppliedIndex has trailed a commit index the
	// leader announced (0 when caught up).
	BehindEntries uint64
	BehindFor     time.Duration
	// DiskWriteErrors counts the failed writes of the Raft log and stable
	// stores since the node started; LastDiskError is the last one, at
	// LastDiskErrorAt.
	DiskWriteErrors uint64
	LastDiskError   string
	LastDiskErrorAt time.Time
	// SnapshotWriteErrors counts the snapshots whose writing failed since
	// the node started (taken by this node, installed from the leader or
	// restored from a backup); LastSnapshotError is the last failure, at
	// LastSnapshotErrorAt. SnapshotFailing is set while no snapshot has
	// succeeded since the last failure.
	SnapshotWriteErrors uint64
	LastSnapshotError   string
	LastSnapshotErrorAt time.Time
	SnapshotFailing     bool
}

// Judge is how a node tells whether the other servers answer: Recent is
// how long ago an answer counts; LeaderSaw (on the leader) says when a
// server last answered Raft; Alive (on a follower) whether gossip holds a
// server alive.
type Judge struct {
	Self      string
	Recent    time.Duration
	LeaderSaw func(id, raftAddr string) (time.Time, bool)
	Alive     func(id string) bool
}

// JudgeHealth marks each server of s healthy or not, as this node can
// tell, and sets s.FailureTolerance. The leader judges the others by
// their answers to Raft within j.Recent; a follower judges the leader by
// its own last contact, within the same time, and the other servers by
// gossip. A node judges itself by its disk and lag (s.Health).
func JudgeHealth(s *Status, j Judge, now time.Time) {
	voters, healthy := 0, 0
	for i := range s.Servers {
		srv := &s.Servers[i]
		switch {
		case srv.ID == j.Self:
			srv.Healthy = s.Health.Problem == ""
		case s.Role == "leader":
			at, ok := j.LeaderSaw(srv.ID, srv.RaftAddr)
			srv.Healthy = ok && now.Sub(at) <= j.Recent
		case srv.Leader:
			srv.Healthy = s.LastContact >= 0 && s.LastContact <= j.Recent
		default:
			srv.Healthy = j.Alive(srv.ID)
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

// HealthShape is what of s a change of health shows in: the failure
// tolerance and each server's health.
func HealthShape(s Status) string {
	shape := strconv.Itoa(s.FailureTolerance)
	for _, srv := range s.Servers {
		shape += " " + srv.ID + "=" + strconv.FormatBool(srv.Healthy)
	}
	return shape
}
