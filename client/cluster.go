package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

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
	return hashRead[NodeStatus](ctx, c, "/v1/status", hash, wait)
}

// Members returns the gossip members as the answering node sees them.
func (c *Client) Members(ctx context.Context) ([]Member, *Meta, error) {
	return c.WaitMembers(ctx, "", 0)
}

// WaitMembers is Members as a blocking read, as WaitStatus is for Status:
// it answers once the members differ from those of the answer whose
// Meta.ContentHash is hash, or when wait ends.
func (c *Client) WaitMembers(ctx context.Context, hash string, wait time.Duration) ([]Member, *Meta, error) {
	out, meta, err := hashRead[wire.MemberList](ctx, c, "/v1/members", hash, wait)
	if err != nil {
		return nil, nil, err
	}
	return out.Members, meta, nil
}

// hashRead makes a hash-blocking read of path.
func hashRead[T any](ctx context.Context, c *Client, path, hash string, wait time.Duration) (*T, *Meta, error) {
	req := &request{method: http.MethodGet, path: path}
	if hash != "" {
		req.query = map[string]string{"hash": hash}
		req.wait = serverDefaultWait
		if wait > 0 {
			req.query["wait"] = wait.String()
			req.wait = wait
		}
	}
	return call[T](ctx, c, req, path)
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
