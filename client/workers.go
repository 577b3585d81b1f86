package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/tenure-io/tenure/client/wire"
)

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
	var all []WorkerInfo
	meta, err := eachPage("list workers", q, func(cursor string, q *QueryOptions) (string, *Meta, error) {
		r, err := pageRequest("/v1/workers", PageOptions{Cursor: cursor}, map[string]string{"id": id}, q)
		if err != nil {
			return "", nil, err
		}
		out, meta, err := call[wire.WorkerList](ctx, g.c, r, "workers")
		if err != nil {
			return "", nil, err
		}
		if meta.Index == 0 {
			meta.Index = out.Index
		}
		all = append(all, out.Workers...)
		return out.Next, meta, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return all, meta, nil
}
