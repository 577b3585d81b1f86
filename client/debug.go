package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

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
