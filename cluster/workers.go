package cluster

import (
	"context"
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/cluster/internal/views"
)

// WorkerView is a worker as the operator sees it (views.WorkerView).
type WorkerView = views.WorkerView

// Workers lists every worker that gossip knows (alive, or dead or departed
// within the last deadMemberTTL) and every worker that the plan, a held
// lease of a group key or a drain mark names, sorted by id, one page of
// them (views.Workers), with the placement and lease index for blocking
// queries.
func (n *Node) Workers(ctx context.Context, c Consistency, id, after string, limit int) ([]WorkerView, string, uint64, error) {
	if err := n.readBarrier(ctx, c); err != nil {
		return nil, "", 0, err
	}
	index := max(n.machine.GroupIndex(), n.LeaseIndex())
	out, next := views.Workers(n.machine, n.workerMembers(), id, after, limit)
	return out, next, index, nil
}

// admission is the balancer's admission check of a worker to a group: nil
// (every worker) with ACLs off, acl.Admit with them on.
func (n *Node) admission() func(worker, group string) bool {
	if !n.cfg.ACLEnabled {
		return nil
	}
	return func(worker, group string) bool {
		return acl.Admit(n.machine, n.cfg.ACLDefaultPolicy, worker, group)
	}
}

// unknownKey is the error of a control on a key nothing knows.
func unknownKey(key string) error {
	return fmt.Errorf("key %q is unknown (no lease, group or control names it; force=true sets its controls anyway): %w", key, ErrNotFound)
}
