package client

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
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

// SetKeys sets the group's whole key set to keys, adding and removing in
// one log entry: the keys that stay keep their owners, the others are
// released by their workers and the new ones placed. Setting the keys the
// group has already changes nothing, so an application that keeps its
// keys in its own store may call it with that store's list at every change
// or on a timer. An empty keys empties the group.
func (g *GroupsAPI) SetKeys(ctx context.Context, name string, keys []string) (*GroupSummary, error) {
	p, err := groupPath(name, "/keys")
	if err != nil {
		return nil, err
	}
	keys = append([]string{}, keys...) // [] rather than null: an empty set is said, not forgotten
	return g.summary(ctx, &request{method: http.MethodPut, path: p, body: wire.GroupKeySetBody{Keys: &keys}})
}

// SetMaxPerWorker changes the per-worker maximum of a group.
func (g *GroupsAPI) SetMaxPerWorker(ctx context.Context, name string, max int) (*GroupSummary, error) {
	p, err := groupPath(name, "/max-per-worker")
	if err != nil {
		return nil, err
	}
	return g.summary(ctx, &request{method: http.MethodPut, path: p, body: wire.MaxPerWorkerBody{MaxPerWorker: max}})
}

// SetBalance sets how the balancer places the keys of a group (see
// GroupBalance: by count, the default, or by load) and returns the balance
// in force, defaults filled in. It replaces the balance the group had,
// weights included. A bad setting fails with ErrInvalid naming the field.
func (g *GroupsAPI) SetBalance(ctx context.Context, name string, b GroupBalance) (*GroupBalance, error) {
	p, err := groupPath(name, "/balance")
	if err != nil {
		return nil, err
	}
	// JSON has no NaN or infinity: said here, naming the field, rather
	// than as an encoding error.
	if math.IsNaN(b.Imbalance) || math.IsInf(b.Imbalance, 0) {
		return nil, fmt.Errorf("%w: imbalance: %v is not a number from 1.05 to 10", ErrInvalid, b.Imbalance)
	}
	for k, w := range b.Weights {
		if err := checkLoad(fmt.Sprintf("weights[%q]", k), w); err != nil {
			return nil, err
		}
	}
	return callOnly[GroupBalance](ctx, g.c, &request{method: http.MethodPut, path: p, body: b}, "group balance")
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

// OperatorOption changes an operator's call (a revoke, a drain, a key
// control).
type OperatorOption func(map[string]string)

// WithForce: the operator takes responsibility for what the cluster would
// otherwise refuse or do slowly. A revoke, disable or prohibit frees the
// holder's lease at once instead of at the holder's deadline (only for a
// holder known to be dead: exclusion then rests on fencing alone); and a
// drain of a worker, or a control of a key, that the cluster does not know
// is accepted (an operator may drain a worker before it starts) instead of
// failing with ErrNotFound.
func WithForce() OperatorOption { return func(q map[string]string) { q["force"] = "true" } }

func operatorQuery(opts []OperatorOption) map[string]string {
	q := map[string]string{}
	for _, o := range opts {
		o(q)
	}
	return q
}

// DrainWorker marks a worker as drained (true) or not (false): the balancer
// gives a drained worker no keys, so it hands its keys back. Draining a
// worker that the cluster does not know fails with ErrNotFound unless
// WithForce; undraining never does. Drain also returns the cluster's
// warnings.
func (g *GroupsAPI) DrainWorker(ctx context.Context, worker string, draining bool, opts ...OperatorOption) error {
	_, err := g.Drain(ctx, worker, draining, opts...)
	return err
}

// Drain is DrainWorker that returns the cluster's answer: its warnings
// name each group that the drain leaves without a live worker to own its
// keys (the drain happened anyway).
func (g *GroupsAPI) Drain(ctx context.Context, worker string, draining bool, opts ...OperatorOption) (*DrainResult, error) {
	if worker == "" {
		return nil, fmt.Errorf("%w: empty worker id", ErrInvalid)
	}
	resp, err := g.c.do(ctx, &request{method: http.MethodPost, path: "/v1/workers/" + url.PathEscape(worker) + "/drain",
		body: wire.DrainBody{Draining: &draining}, query: operatorQuery(opts)})
	if err != nil {
		return nil, err
	}
	out := DrainResult{Worker: worker, Draining: draining}
	if len(resp.body) > 0 {
		if err := json.Unmarshal(resp.body, &out); err != nil {
			return nil, fmt.Errorf("decode drain: %w", err)
		}
	}
	return &out, nil
}

// Workers lists every worker that gossip knows (alive, or dead or gone in
// the last minutes) and every worker that a group's plan, a held lease or
// a drain mark names, with its groups, capacity, drain state and keys. With
// q.WaitIndex it blocks until the plan, the leases or the drain marks
// change past that index (gossip changes do not end the wait). The server
// answers in pages of workers (1000 by default); Workers follows them, and
// only the first page blocks.
func (g *GroupsAPI) Workers(ctx context.Context, q *QueryOptions) ([]WorkerInfo, *Meta, error) {
	return g.workers(ctx, "", q)
}

// Worker reads one worker as Workers shows it; ErrNotFound when nothing
// knows it.
func (g *GroupsAPI) Worker(ctx context.Context, id string, q *QueryOptions) (*WorkerInfo, *Meta, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("%w: empty worker id", ErrInvalid)
	}
	list, meta, err := g.workers(ctx, id, q)
	if err != nil {
		return nil, nil, err
	}
	for i := range list {
		if list[i].ID == id {
			return &list[i], meta, nil
		}
	}
	return nil, meta, fmt.Errorf("worker %q: %w", id, ErrNotFound)
}

func (g *GroupsAPI) workers(ctx context.Context, id string, q *QueryOptions) ([]WorkerInfo, *Meta, error) {
	return eachPage("list workers", q, func(cursor string, q *QueryOptions) ([]WorkerInfo, string, *Meta, error) {
		r, err := pageRequest("/v1/workers", PageOptions{Cursor: cursor}, map[string]string{"id": id}, q)
		if err != nil {
			return nil, "", nil, err
		}
		out, meta, err := call[wire.WorkerList](ctx, g.c, r, "workers")
		if err != nil {
			return nil, "", nil, err
		}
		if meta.Index == 0 {
			meta.Index = out.Index
		}
		return out.Workers, out.Next, meta, nil
	})
}
