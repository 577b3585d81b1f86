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
			r, err := p.submit(ctx, &op{cmd: cmd})
			if err == nil && r.Code == fsm.CASFailed {
				return placement.ErrPlanRefused
			}
			return err
		},
		Workers:        func() []Member { return liveWorkers(n.workerMembers()) },
		WorkersIndex:   func() uint64 { return presenceIndex(n.machine) },
		WorkersChanged: n.membersChanged,
		Logger:         n.cfg.Logger.Named("balancer"),
		Clock:          n.cfg.Clock,
		Debounce:       n.cfg.BalanceDebounce,
		Settle:         n.cfg.BalanceSettle,
		Stuck:          p.stuck,
		Check:          n.cfg.StuckCheck,
		Admit:          n.admission(),
		Loads:          p.loads,
	}
	return placement.NewBalancer(cfg)
}

// KeyLoad is one key's load as its holder reported it with a renewal.
type KeyLoad = placement.KeyLoad

// ReportLoads records the loads that a renewal of holder reported, once it
// succeeded: those of the keys it renewed and, when total is not nil, the
// holder's total. Only the leader keeps them (the renewal succeeded on
// it); on another node it does nothing. The caller checked the numbers
// (wire.MaxLoad).
func (n *Node) ReportLoads(holder string, keys []KeyLoad, total *float64) {
	if p := n.leading.Load(); p != nil {
		p.loads.Report(holder, keys, total)
	}
}
