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

// GroupSpec defines a group: explicit Keys, or Count keys named Prefix0 …
// Prefix(Count-1). MaxPerWorker bounds the keys of one worker (0: no bound
// beyond an even spread). StuckGrace is how long a key may stay free while
// targeted at a live worker before the balancer marks the worker stuck and
// moves its keys (a duration; "" or "0s": twice the largest TTL of the
// group's leases). MinWorkers is how many workers able to take keys the
// group should have; fewer is reported by GET /v1/health/placement.
type GroupSpec struct {
	Keys         []string `json:"keys,omitempty"`
	Prefix       string   `json:"prefix,omitempty"`
	Count        int      `json:"count,omitempty"`
	MaxPerWorker int      `json:"max_per_worker,omitempty"`
	StuckGrace   string   `json:"stuck_grace,omitempty"`
	MinWorkers   int      `json:"min_workers,omitempty"`
}

// GroupKey is one key of a group: the balancer's target and the actual
// holder of its lease.
type GroupKey struct {
	Key    string `json:"key"`
	Target string `json:"target,omitempty"`
	Holder string `json:"holder,omitempty"`
	// Worker is the id of the worker that holds the key (from its lease's
	// "worker" metadata), or the holder when the lease names none.
	Worker     string   `json:"worker,omitempty"`
	Token      uint64   `json:"token,omitempty"`
	State      string   `json:"state"`
	Disabled   bool     `json:"disabled,omitempty"`
	Prohibited []string `json:"prohibited,omitempty"`
}

// GroupWorker is a live worker of a group with its number of target and
// held keys.
type GroupWorker struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Capacity int    `json:"capacity,omitempty"`
	Draining bool   `json:"draining,omitempty"`
	Drained  bool   `json:"drained,omitempty"`
	Targets  int    `json:"targets"`
	Holds    int    `json:"holds"`
	// Stuck: the balancer found the worker not taking its targets; it
	// keeps what it holds and gets no new keys for a while.
	Stuck bool `json:"stuck,omitempty"`
}

// Group is a group with every key's target and owner.
type Group struct {
	Name         string        `json:"name"`
	MaxPerWorker int           `json:"max_per_worker"`
	Keys         []GroupKey    `json:"keys"`
	Workers      []GroupWorker `json:"workers"`
	ModifyIndex  uint64        `json:"modify_index"`
	AssignIndex  uint64        `json:"assign_index"`
	// StuckGrace is the group's own grace ("" when it uses the default),
	// MinWorkers its minimum (0: none), Stuck the workers the balancer
	// marked stuck (sorted; they need not be alive).
	StuckGrace string   `json:"stuck_grace,omitempty"`
	MinWorkers int      `json:"min_workers,omitempty"`
	Stuck      []string `json:"stuck,omitempty"`
	// Next, in one page of the group (GetPage), is the cursor of the next
	// page of Keys; empty after the last one. The workers' counts cover
	// every key of the group that the token may read, on every page.
	Next string `json:"next"`
	// HiddenKeys is the number of the group's keys (of the whole group,
	// on every page) that the answer left out, from Keys and from the
	// workers' counts, because the token may not read them (ACLs on).
	HiddenKeys int `json:"hidden_keys"`
}

// KeyControl is an operator's controls of a key. Key names it in answers;
// SetControl ignores it, and Ended, and sends a wire.KeyControlBody.
type KeyControl struct {
	Key        string   `json:"key,omitempty"`
	Disabled   bool     `json:"disabled"`
	Prohibited []string `json:"prohibited"`
	// Ended, in the answer of a change only, is the lease the change
	// ended: its holder is prohibited, or the key disabled (see
	// RevokedLease).
	Ended []RevokedLease `json:"ended,omitempty"`
}

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
	return g.summaryReq(ctx, &request{method: http.MethodPut, path: p, body: spec, query: q, unsafeRetry: true})
}

// Replace creates a group or replaces its keys and settings, whatever is
// there (?replace=true). The plan of keys that stay is kept.
func (g *GroupsAPI) Replace(ctx context.Context, name string, spec GroupSpec) (*GroupSummary, error) {
	p, err := groupPath(name, "")
	if err != nil {
		return nil, err
	}
	return g.summaryReq(ctx, &request{method: http.MethodPut, path: p, body: spec, query: map[string]string{"replace": "true"}})
}

// AddRemoveKeys adds and removes keys of a group.
func (g *GroupsAPI) AddRemoveKeys(ctx context.Context, name string, add, remove []string) (*GroupSummary, error) {
	p, err := groupPath(name, "/keys")
	if err != nil {
		return nil, err
	}
	return g.summary(ctx, http.MethodPost, p, wire.GroupKeysBody{Add: add, Remove: remove})
}

// SetMaxPerWorker changes the per-worker maximum of a group.
func (g *GroupsAPI) SetMaxPerWorker(ctx context.Context, name string, max int) (*GroupSummary, error) {
	p, err := groupPath(name, "/max-per-worker")
	if err != nil {
		return nil, err
	}
	return g.summary(ctx, http.MethodPut, p, wire.MaxPerWorkerBody{MaxPerWorker: max})
}

func (g *GroupsAPI) summary(ctx context.Context, method, path string, body any) (*GroupSummary, error) {
	return g.summaryReq(ctx, &request{method: method, path: path, body: body})
}

func (g *GroupsAPI) summaryReq(ctx context.Context, r *request) (*GroupSummary, error) {
	out, _, err := call[GroupSummary](ctx, g.c, r, "group")
	if err != nil {
		return nil, err
	}
	return out, nil
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
	out, _, err := call[KeyControl](ctx, g.c, r, "control")
	if err != nil {
		return nil, err
	}
	return out, nil
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
