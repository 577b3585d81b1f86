package client

import (
	"context"
	"net/http"
	"strconv"

	"github.com/tenure-io/tenure/client/wire"
)

// GroupsAPI makes the group, key-control and worker calls of the HTTP API.
// Get it from Client.Groups. Writes that set state are idempotent and
// retried like lease calls; Put and PutCAS, whose retry after an unknown
// outcome would fail its own check, are retried only when the server
// surely did not act.
type GroupsAPI struct {
	c *Client
}

// Groups returns the group calls of c.
func (c *Client) Groups() *GroupsAPI { return &GroupsAPI{c: c} }

func groupPath(name, suffix string) (string, error) {
	p, err := leasePath("/v1/groups/", name)
	return p + suffix, err
}

// Put creates a group. It does not replace a group that exists: that
// fails with an *APIError matching ErrCASFailed whose Group is the current
// group; use PutCAS or Replace for that.
func (g *GroupsAPI) Put(ctx context.Context, name string, spec GroupSpec) (*GroupSummary, error) {
	return g.PutCAS(ctx, name, spec, 0)
}

// PutCAS creates or replaces a group if its modify index is index
// (GroupSummary.ModifyIndex of a read; the balancer's plan changes it too),
// or, with index 0, creates it only if it does not exist. A failed check
// is an *APIError matching ErrCASFailed whose Group is the current group.
func (g *GroupsAPI) PutCAS(ctx context.Context, name string, spec GroupSpec, index uint64) (*GroupSummary, error) {
	p, err := groupPath(name, "")
	if err != nil {
		return nil, err
	}
	q := map[string]string{"cas": strconv.FormatUint(index, 10)}
	return g.summary(ctx, &request{method: http.MethodPut, path: p, body: spec, query: q, unsafeRetry: true})
}

// Replace creates a group or replaces its keys and settings, whatever is
// there (?replace=true). The plan of keys that stay is kept.
func (g *GroupsAPI) Replace(ctx context.Context, name string, spec GroupSpec) (*GroupSummary, error) {
	p, err := groupPath(name, "")
	if err != nil {
		return nil, err
	}
	return g.summary(ctx, &request{method: http.MethodPut, path: p, body: spec, query: map[string]string{"replace": "true"}})
}

// AddRemoveKeys adds and removes keys of a group.
func (g *GroupsAPI) AddRemoveKeys(ctx context.Context, name string, add, remove []string) (*GroupSummary, error) {
	p, err := groupPath(name, "/keys")
	if err != nil {
		return nil, err
	}
	return g.summary(ctx, &request{method: http.MethodPost, path: p, body: wire.GroupKeysBody{Add: add, Remove: remove}})
}

// SetMaxPerWorker changes the per-worker maximum of a group.
func (g *GroupsAPI) SetMaxPerWorker(ctx context.Context, name string, max int) (*GroupSummary, error) {
	p, err := groupPath(name, "/max-per-worker")
	if err != nil {
		return nil, err
	}
	return g.summary(ctx, &request{method: http.MethodPut, path: p, body: wire.MaxPerWorkerBody{MaxPerWorker: max}})
}

func (g *GroupsAPI) summary(ctx context.Context, r *request) (*GroupSummary, error) {
	return callOnly[GroupSummary](ctx, g.c, r, "group")
}

// Delete removes a group; its leases are left as they are.
func (g *GroupsAPI) Delete(ctx context.Context, name string) error {
	p, err := groupPath(name, "")
	if err != nil {
		return err
	}
	_, err = g.c.do(ctx, &request{method: http.MethodDelete, path: p})
	return err
}

// Control reads the controls of a key.
func (g *GroupsAPI) Control(ctx context.Context, key string) (*KeyControl, error) {
	p, err := leasePath("/v1/controls/", key)
	if err != nil {
		return nil, err
	}
	return g.control(ctx, &request{method: http.MethodGet, path: p})
}

// SetControl replaces the controls of a key: Disabled stops anyone from
// acquiring it; Prohibited lists holders that may not acquire it. A zero
// KeyControl clears them. When the new controls refuse the current
// holder, its lease ends safely (see RevokedLease); SetControlWith says
// when it frees. WithForce frees it at once, and also accepts a key that
// the cluster does not know (no lease, no group, no controls), which
// otherwise fails with ErrNotFound.
func (g *GroupsAPI) SetControl(ctx context.Context, key string, ctl KeyControl, opts ...OperatorOption) error {
	_, err := g.SetControlWith(ctx, key, ctl, opts...)
	return err
}

// SetControlWith is SetControl that answers the controls set and the lease
// they ended, if any.
func (g *GroupsAPI) SetControlWith(ctx context.Context, key string, ctl KeyControl, opts ...OperatorOption) (*KeyControl, error) {
	p, err := leasePath("/v1/controls/", key)
	if err != nil {
		return nil, err
	}
	body := wire.KeyControlBody{Disabled: ctl.Disabled, Prohibited: ctl.Prohibited}
	if body.Prohibited == nil {
		body.Prohibited = []string{}
	}
	// Key and Ended are not sent: the path names the key, Ended is an answer.
	return g.control(ctx, &request{method: http.MethodPut, path: p, query: operatorQuery(opts), body: body})
}

// control makes a key-control call and decodes the controls it answers.
func (g *GroupsAPI) control(ctx context.Context, r *request) (*KeyControl, error) {
	return callOnly[KeyControl](ctx, g.c, r, "control")
}

// EditControl changes the controls of a key on top of what they are when
// the change commits, atomically on the servers: two operators who
// prohibit different holders at once both get theirs. It returns the
// controls after the change, with the lease they ended (Ended) when they
// refuse the key's holder: that lease ends as SetControl ends it. WithForce
// frees that lease at once (the token then needs the revoke right too) and
// accepts a key the cluster does not know.
func (g *GroupsAPI) EditControl(ctx context.Context, key string, edit KeyControlEdit, opts ...OperatorOption) (*KeyControl, error) {
	p, err := leasePath("/v1/controls/", key)
	if err != nil {
		return nil, err
	}
	return g.control(ctx, &request{method: http.MethodPatch, path: p, body: edit, query: operatorQuery(opts)})
}
