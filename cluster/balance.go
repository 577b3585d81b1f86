package cluster

import (
	"context"

	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/fsm"
)

// MinStuckGrace and MaxStuckGrace bound a group's stuck grace (and
// Config.DefaultStuckGrace): a grace shorter than a lease renewal would
// mark healthy workers stuck; one longer than a day leaves keys unowned
// for longer than anyone waits.
const (
	MinStuckGrace = placement.MinStuckGrace
	MaxStuckGrace = placement.MaxStuckGrace
)

// UnownedKey is a key of a group that no lease holds.
type UnownedKey = placement.UnownedKey

// StuckWorker is a worker that the balancer marked stuck in a group.
type StuckWorker = placement.StuckWorker

// newBalancer returns the balancer of the leadership whose proposer is p.
func (n *Node) newBalancer(p *proposer) *placement.Balancer {
	cfg := placement.BalancerConfig{
		State: n.machine,
		Submit: func(ctx context.Context, cmd fsm.Command) error {
			_, err := p.submit(ctx, &op{cmd: cmd})
			return err
		},
		Workers:        func() []placement.Worker { return placementWorkers(liveWorkers(n.Members())) },
		WorkersChanged: n.membersChanged,
		Logger:         n.cfg.Logger.Named("balancer"),
		Clock:          n.cfg.Clock,
		Debounce:       n.cfg.BalanceDebounce,
		Settle:         n.cfg.BalanceSettle,
		Stuck:          p.stuck,
		Check:          n.cfg.StuckCheck,
		Admit:          n.admission(),
	}
	return placement.NewBalancer(cfg)
}

// placementWorkers is the balancer's view of members.
func placementWorkers(members []Member) []placement.Worker {
	out := make([]placement.Worker, len(members))
	for i, m := range members {
		out[i] = placement.Worker{ID: m.Meta.ID, Capacity: m.Meta.Capacity, Draining: m.Meta.Draining, Groups: m.Meta.Groups}
	}
	return out
}
