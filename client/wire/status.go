package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// NodeStatus is one server's view of the cluster.
type NodeStatus struct {
	NodeID string `json:"node_id"`
	// ClusterID is the id the cluster's first leader gave it; "" until
	// then (and from a server whose build has none).
	ClusterID      string `json:"cluster_id,omitempty"`
	Role           string `json:"role"`
	LeaderID       string `json:"leader_id"`
	LeaderHTTPAddr string `json:"leader_http_addr"`
	Term           uint64 `json:"term"`
	LastLogIndex   uint64 `json:"last_log_index"`
	CommitIndex    uint64 `json:"commit_index"`
	AppliedIndex   uint64 `json:"applied_index"`
	// LastContact is how long ago this node last heard from the leader;
	// negative when it never has.
	LastContact time.Duration `json:"-"`
	// LastToken is the last fencing token handed out in the cluster.
	LastToken uint64       `json:"last_token"`
	Ready     bool         `json:"ready"`
	Servers   []ServerInfo `json:"servers"`
	// FailureTolerance is how many more voters may fail before the
	// cluster can commit nothing, as this server can tell (the leader by
	// the Raft answers of each server; a follower by its contact with the
	// leader and by gossip for the others): the healthy voters less a
	// quorum of all voters, never below 0. 0 with no leader.
	FailureTolerance int `json:"failure_tolerance"`
	// NotReady says why this node must not be counted on although it may
	// answer: a failed write of its Raft log or stable store (a full
	// disk), a failed snapshot with none succeeding since, or an applied index too far behind the leader's commit index
	// (GET /readyz answers 503 with the same reason). Empty when neither.
	NotReady string `json:"not_ready,omitempty"`
	// LeaderCommitIndex is the highest commit index this node has heard
	// the leader announce (its own on the leader); BehindEntries is how
	// far AppliedIndex trails it, and BehindFor for how long (a duration
	// string, "0s" when caught up).
	LeaderCommitIndex uint64 `json:"leader_commit_index"`
	BehindEntries     uint64 `json:"behind_entries"`
	BehindFor         string `json:"behind_for"`
	// DiskWriteErrors counts the failed writes of the node's Raft log
	// and stable stores since it started; LastDiskError is the last one.
	DiskWriteErrors uint64 `json:"disk_write_errors"`
	LastDiskError   string `json:"last_disk_error,omitempty"`
	// SnapshotWriteErrors counts the snapshots the node failed to write
	// since it started; LastSnapshotError is the last failure. A node
	// whose last snapshot failed is not ready until one succeeds.
	SnapshotWriteErrors uint64 `json:"snapshot_write_errors"`
	LastSnapshotError   string `json:"last_snapshot_error,omitempty"`
}

// ServerInfo is one server of the Raft configuration.
type ServerInfo struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
	// Healthy: the server answers, as the server that answered the
	// status can tell (see NodeStatus.FailureTolerance).
	Healthy bool `json:"healthy"`
}

type nodeStatusAlias NodeStatus

// UnmarshalJSON accepts last_contact as a duration string ("12ms"),
// "never", or a number of milliseconds (negative: never).
func (s *NodeStatus) UnmarshalJSON(data []byte) error {
	var w struct {
		*nodeStatusAlias
		LastContact json.RawMessage `json:"last_contact"`
	}
	w.nodeStatusAlias = (*nodeStatusAlias)(s)
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	d, err := flexDuration(w.LastContact)
	if err != nil {
		return fmt.Errorf("status field last_contact: %w", err)
	}
	s.LastContact = d
	return nil
}

// MarshalJSON writes last_contact as a duration string, or "never".
func (s NodeStatus) MarshalJSON() ([]byte, error) {
	lc := s.LastContact.String()
	if s.LastContact < 0 {
		lc = "never"
	}
	return json.Marshal(struct {
		nodeStatusAlias
		LastContact string `json:"last_contact"`
	}{nodeStatusAlias(s), lc})
}

// flexDuration decodes a JSON duration string, or a number of milliseconds.
func flexDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch s {
		case "":
			return 0, nil
		case "never":
			return -1, nil
		}
		return time.ParseDuration(s)
	}
	ms, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("not a duration: %s", raw)
	}
	return LastContact(ms), nil
}

// SnapshotInfo describes a Raft snapshot.
type SnapshotInfo struct {
	ID    string `json:"id"`
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	Size  int64  `json:"size"`
}

// LastContact converts the milliseconds of X-Tenure-Last-Contact (and of
// a status's last_contact as a number); a negative value (never) becomes
// -1ns so that it stays negative.
func LastContact(ms float64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms * float64(time.Millisecond))
}
