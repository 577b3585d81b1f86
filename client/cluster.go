package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tenure-io/tenure/client/wire"
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
	return lastContact(ms), nil
}

// Status returns the view of the node that the client is talking to (the
// leader once the client has learned it).
func (c *Client) Status(ctx context.Context) (*NodeStatus, *Meta, error) {
	return c.WaitStatus(ctx, "", 0)
}

// WaitStatus is Status as a blocking read: with hash, the Meta.ContentHash
// of an earlier answer, the node answers once its status differs from
// that one in its role, leader, term, readiness or servers (not in its
// indexes or times), or when wait ends (0: the server's default, 5m). A
// change of leader, role or readiness answers at once; a term that moves
// under the same leader, within 30s. An empty hash answers at once. The
// answer may come from another node than the earlier one (after a leader
// change), whose hash differs.
func (c *Client) WaitStatus(ctx context.Context, hash string, wait time.Duration) (*NodeStatus, *Meta, error) {
	var s NodeStatus
	meta, err := c.hashRead(ctx, "/v1/status", hash, wait, &s)
	if err != nil {
		return nil, nil, err
	}
	return &s, meta, nil
}

// Members returns the gossip members as the answering node sees them.
func (c *Client) Members(ctx context.Context) ([]Member, *Meta, error) {
	return c.WaitMembers(ctx, "", 0)
}

// WaitMembers is Members as a blocking read, as WaitStatus is for Status:
// it answers once the members differ from those of the answer whose
// Meta.ContentHash is hash, or when wait ends.
func (c *Client) WaitMembers(ctx context.Context, hash string, wait time.Duration) ([]Member, *Meta, error) {
	var out wire.MemberList
	meta, err := c.hashRead(ctx, "/v1/members", hash, wait, &out)
	if err != nil {
		return nil, nil, err
	}
	return out.Members, meta, nil
}

// hashRead makes a hash-blocking read of path into v.
func (c *Client) hashRead(ctx context.Context, path, hash string, wait time.Duration, v any) (*Meta, error) {
	req := &request{method: http.MethodGet, path: path}
	if hash != "" {
		req.query = map[string]string{"hash": hash}
		req.wait = serverDefaultWait
		if wait > 0 {
			req.query["wait"] = wait.String()
			req.wait = wait
		}
	}
	resp, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(resp.body, v); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return resp.meta, nil
}

// OperatorAPI makes the operator calls. Get it from Client.Operator.
//
// RemoveServer and TransferLeader are not idempotent, so they are retried
// only after failures that prove the server did not act (connection
// refused, 429, 503 no_leader); after an unknown outcome (leadership_lost,
// timeout, a broken connection) the error is returned and the caller should
// look at Status before trying again.
type OperatorAPI struct {
	c *Client
}

// Operator returns the operator calls of c.
func (c *Client) Operator() *OperatorAPI { return &OperatorAPI{c: c} }

// SnapshotInfo describes a Raft snapshot.
type SnapshotInfo struct {
	ID    string `json:"id"`
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	Size  int64  `json:"size"`
}

// RemoveServer removes the server id from the Raft configuration. It fails
// with ErrNotFound when no server has that id, and, unless force, with
// ErrUnsafeRemoval (nothing changed) when the server is alive and in touch
// with the leader or when the removal would leave fewer voters than the
// cluster was bootstrapped with. The result says how to bring the server
// back (ReadmitServer); it keeps its data dir.
func (o *OperatorAPI) RemoveServer(ctx context.Context, id string, force bool) (*RemoveResult, *Meta, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("%w: server id is empty", ErrInvalid)
	}
	path := "/v1/operator/servers/" + url.PathEscape(id)
	if force {
		path += "?force=true"
	}
	return call[RemoveResult](ctx, o.c, &request{method: http.MethodDelete, path: path, unsafeRetry: true}, "remove answer")
}

// ReadmitServer adds back, as a non-voter, the server id that was removed
// and runs again with its data dir (gossip must list it alive); the leader
// promotes it once it has caught up while the cluster has fewer voters
// than its configured size, or PromoteServer does. It fails with
// ErrNotFound when no alive server of the cluster announces that id. A
// server already in the configuration is left as it is, so the call is
// retried like any idempotent one.
func (o *OperatorAPI) ReadmitServer(ctx context.Context, id string) (*ReadmitResult, *Meta, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("%w: server id is empty", ErrInvalid)
	}
	return call[ReadmitResult](ctx, o.c, &request{method: http.MethodPost,
		path: "/v1/operator/servers/" + url.PathEscape(id) + "/readmit"}, "readmit answer")
}

// PromoteServer makes the non-voting server id a voter, also beyond the
// configured size of the cluster, and returns the number of voters
// afterwards. It fails with ErrNotFound when no server has that id, and
// with ErrNotCaughtUp while the leader is not in touch with it or its log
// is behind. Promoting a voter changes nothing, so the call is retried like
// any idempotent one.
func (o *OperatorAPI) PromoteServer(ctx context.Context, id string) (*PromoteResult, *Meta, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("%w: server id is empty", ErrInvalid)
	}
	return call[PromoteResult](ctx, o.c, &request{method: http.MethodPost,
		path: "/v1/operator/servers/" + url.PathEscape(id) + "/promote"}, "promote answer")
}

// TransferLeader hands leadership to the server id, or, when id is empty,
// to the most up-to-date server. It returns the id of the new leader.
func (o *OperatorAPI) TransferLeader(ctx context.Context, id string) (string, *Meta, error) {
	body := wire.TransferBody{ID: id}
	out, meta, err := call[wire.TransferResult](ctx, o.c, &request{method: http.MethodPost,
		path: "/v1/operator/transfer-leader", body: body, unsafeRetry: true}, "transfer answer")
	if err != nil {
		return "", nil, err
	}
	return out.LeaderID, meta, nil
}

// Snapshot makes the answering server (the leader, once the client
// follows it) take a Raft snapshot now. A retry after an unknown outcome
// may take a second snapshot, which is harmless.
func (o *OperatorAPI) Snapshot(ctx context.Context) (*SnapshotInfo, *Meta, error) {
	return call[SnapshotInfo](ctx, o.c, &request{method: http.MethodPost, path: "/v1/operator/snapshot"}, "snapshot answer")
}
