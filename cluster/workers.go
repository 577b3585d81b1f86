package cluster

import (
	"context"
	"fmt"

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
	out, next := views.Workers(n.machine, n.Members(), id, after, limit)
	return out, next, index, nil
}

// knownWorker reports whether anything in the cluster knows worker
// (views.KnownWorker).
func (n *Node) knownWorker(worker string) bool {
	return views.KnownWorker(n.machine, n.Members(), worker)
}

// knownKey reports whether key exists for the cluster (views.KnownKey).
func (n *Node) knownKey(key string) bool { return views.KnownKey(n.machine, key) }

// drainWarnings says, for each group of worker, when draining it leaves
// the group without a live worker to own its keys (views.DrainWarnings).
func (n *Node) drainWarnings(worker string) []string {
	return views.DrainWarnings(n.machine, liveWorkers(n.Members()), worker, n.admission())
}

// admission is the balancer's admission check of a worker to a group: nil
// (every worker) with ACLs off, admitWorker with them on.
func (n *Node) admission() func(worker, group string) bool {
	if n.cfg.ACLEnabled {
		return n.admitWorker
	}
	return nil
}

// unknownWorker is the error of a drain of a worker nothing knows.
func unknownWorker(worker string) error {
	return fmt.Errorf("worker %q is unknown (no gossip member, registration, drain mark, target or lease names it; force=true drains it anyway): %w", worker, ErrNotFound)
}

// unknownKey is the error of a control on a key nothing knows.
func unknownKey(key string) error {
	return fmt.Errorf("key %q is unknown (no lease, group or control names it; force=true sets its controls anyway): %w", key, ErrNotFound)
}
