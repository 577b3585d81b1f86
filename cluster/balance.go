package cluster

import (
	"context"

	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/fsm"
)

// newBalancer returns the balancer of the leadership whose proposer is p.
func (n *Node) newBalancer(p *proposer) *placement.Balancer {
	cfg := placement.BalancerConfig{
		State: n.machine,
		Submit: func(ctx context.Context, cmd fsm.Command) error {
			_, err := p.submit(ctx, &op{cmd: cmd})
			return err
		},
		Workers:        n.placementWorkers,
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

// placementWorkers is the balancer's view of the live workers.
func (n *Node) placementWorkers() []placement.Worker {
	members := liveWorkers(n.Members())
	out := make([]placement.Worker, len(members))
	for i, m := range members {
		out[i] = placement.Worker{ID: m.Meta.ID, Capacity: m.Meta.Capacity, Draining: m.Meta.Draining, Groups: m.Meta.Groups}
	}
	return out
}
