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
		Workers:        func() []Member { return liveWorkers(n.Members()) },
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
