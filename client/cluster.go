package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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

// PlacementHealth asks the leader for unowned keys, stuck workers, groups
// below their minimum and leases not renewed for longer than threshold (0:
// two thirds of each lease's TTL). It needs read on every group.
func (c *Client) PlacementHealth(ctx context.Context, threshold time.Duration) (*PlacementHealth, error) {
	req := &request{method: http.MethodGet, path: "/v1/health/placement"}
	if threshold > 0 {
		req.query = map[string]string{"threshold": threshold.String()}
	}
	return callOnly[PlacementHealth](ctx, c, req, "placement health")
}

// Keyring lists the gossip keys that the members alive in the answering
// server's view hold.
func (o *OperatorAPI) Keyring(ctx context.Context) (*Keyring, *Meta, error) {
	return call[Keyring](ctx, o.c, &request{method: http.MethodGet, path: "/v1/operator/keyring"}, "keyring")
}

// ChangeKeyring installs, uses (as primary) or removes a gossip key on the
// answering server, which sends the change to every member; Unreached of
// the answer names those it could not reach. Rotate a key in three calls,
// waiting between them until Keyring shows every member has followed:
// install the new key, use it, remove the old one. The server refuses a use
// of a key that an alive member lacks and a remove of a key that an alive
// member still encrypts with, unless force. Each call is idempotent, so it
// is retried like lease calls.
func (o *OperatorAPI) ChangeKeyring(ctx context.Context, op string, key []byte, force bool) (*Keyring, *Meta, error) {
	body := wire.KeyringBody{Op: op, GossipKey: base64.StdEncoding.EncodeToString(key), Force: force}
	return call[Keyring](ctx, o.c, &request{method: http.MethodPost, path: "/v1/operator/keyring", body: body}, "keyring")
}

// snapshotTimeout is the time limit of one attempt of a backup or a
// restore, which move up to MaxSnapshotBytes: longer than the server's
// limit of a restore (5 minutes), so that its answer arrives.
const snapshotTimeout = 10 * time.Minute

// SaveSnapshot reads a backup of the whole state from the leader, as of a
// linearizable read: every write acknowledged before the call is in it.
// The bytes are the snapshot format (with its index, term and CRC-32C)
// that RestoreSnapshot and `tenure snapshot inspect` read. It needs the
// operator right.
func (o *OperatorAPI) SaveSnapshot(ctx context.Context) ([]byte, *Meta, error) {
	resp, err := o.c.do(ctx, &request{method: http.MethodGet, path: "/v1/snapshot", timeout: snapshotTimeout, maxAnswer: MaxSnapshotBytes})
	if err != nil {
		return nil, nil, err
	}
	return resp.body, resp.meta, nil
}

// RestoreSnapshot replaces the state of the whole cluster with a backup
// that SaveSnapshot made, through Raft: every server takes it. Leases held
// at the time of the restore keep their holder; every other lease the
// backup holds restarts with a full TTL; the next token is above every
// token the cluster handed out, before the backup and since. A backup
// restored into another cluster (a new one, after a disaster) cannot know
// the tokens the old cluster handed out after it: pass the old cluster's
// last token, or a bound above it, as tokenFloor (0 for none). It needs
// the operator right, and is not retried once it may have started.
func (o *OperatorAPI) RestoreSnapshot(ctx context.Context, snapshot []byte, tokenFloor uint64) (*RestoreResult, *Meta, error) {
	return o.RestoreSnapshotWith(ctx, snapshot, RestoreOptions{TokenFloor: tokenFloor})
}

// RestoreOptions say how RestoreSnapshotWith treats a backup.
type RestoreOptions struct {
	// TokenFloor: see RestoreSnapshot (0 for none).
	TokenFloor uint64
	// Unverified restores a backup that the cluster did not sign: one of
	// another cluster, an edited one, or one written before signed
	// backups. Without it such a backup is refused (ErrBackupUnverified).
	// It needs the acl right.
	Unverified bool
}

// RestoreSnapshotWith is RestoreSnapshot with options. Without the acl
// right the cluster keeps its own ACL state (RestoreResult.ACLRestored
// is false).
func (o *OperatorAPI) RestoreSnapshotWith(ctx context.Context, snapshot []byte, opts RestoreOptions) (*RestoreResult, *Meta, error) {
	if len(snapshot) == 0 {
		return nil, nil, fmt.Errorf("snapshot: empty")
	}
	if len(snapshot) > MaxSnapshotBytes {
		return nil, nil, fmt.Errorf("snapshot: %d bytes is more than %d", len(snapshot), MaxSnapshotBytes)
	}
	r := &request{method: http.MethodPut, path: "/v1/snapshot", raw: snapshot, timeout: snapshotTimeout, unsafeRetry: true}
	r.query = map[string]string{}
	if opts.TokenFloor > 0 {
		r.query["token-floor"] = strconv.FormatUint(opts.TokenFloor, 10)
	}
	if opts.Unverified {
		r.query["unverified"] = "true"
	}
	return call[RestoreResult](ctx, o.c, r, "restore answer")
}

// debugTimeout bounds each call of NodeDebugAPI.
const debugTimeout = 30 * time.Second

// NodeDebugAPI reads what a bug report needs from one server: its status,
// members, metrics, runtime profiles and recent log lines. Get it from
// Client.NodeDebug.
//
// Every call goes to that one server, once: it is never forwarded to the
// leader, never sent to the leader an answer names, and never retried on
// another server, so that everything read describes the same process. An
// error is that server's (an *APIError: ErrPermissionDenied without the
// operator right, ErrNotFound for a part the server does not serve) or the
// connection's.
type NodeDebugAPI struct {
	c    *Client
	addr string
}

// NodeDebug returns the debug calls of the first of Config.Addresses.
func (c *Client) NodeDebug() *NodeDebugAPI {
	return &NodeDebugAPI{c: c, addr: c.route.seeds[0]}
}

// Address is the address of the server asked.
func (d *NodeDebugAPI) Address() string { return d.addr }

// get reads path from the server, once.
func (d *NodeDebugAPI) get(ctx context.Context, path string, query map[string]string) ([]byte, error) {
	r := &request{method: http.MethodGet, path: path, query: query, timeout: debugTimeout}
	resp, _, err := d.c.attempt(ctx, d.addr, r, nil)
	if err != nil {
		return nil, err
	}
	return resp.body, nil
}

// Status returns the server's GET /v1/status answer as it came (JSON,
// NodeStatus). Any valid token may read it.
func (d *NodeDebugAPI) Status(ctx context.Context) ([]byte, error) {
	return d.get(ctx, "/v1/status", nil)
}

// Members returns the server's GET /v1/members answer as it came (JSON,
// wire.MemberList).
func (d *NodeDebugAPI) Members(ctx context.Context) ([]byte, error) {
	return d.get(ctx, "/v1/members", nil)
}

// Metrics returns the server's /metrics in the Prometheus text format. It
// needs the operator right, unless the server runs with -metrics-open.
func (d *NodeDebugAPI) Metrics(ctx context.Context) ([]byte, error) {
	return d.get(ctx, "/metrics", nil)
}

// Profile returns the server's runtime profile name (one of
// DebugProfiles) in the runtime/pprof format that `go tool pprof` reads.
// It needs the operator right.
func (d *NodeDebugAPI) Profile(ctx context.Context, name string) ([]byte, error) {
	if !slices.Contains(DebugProfiles, name) {
		return nil, fmt.Errorf("profile: %q is not served, want one of %v", name, DebugProfiles)
	}
	return d.get(ctx, "/v1/debug/pprof/"+url.PathEscape(name), nil)
}

// Logs returns the server's last log lines (GET /v1/debug/logs), oldest
// first, in the format the server logs in. It needs the operator right.
func (d *NodeDebugAPI) Logs(ctx context.Context) ([]byte, error) {
	return d.get(ctx, "/v1/debug/logs", nil)
}
