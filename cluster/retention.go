package cluster

import (
	"context"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/cluster/internal/retention"
	"github.com/tenure-io/tenure/fsm"
)

// sweepFreeKeys forgets, through p, the keys free for longer than keep,
// until ctx ends (retention.Sweeper).
func (n *Node) sweepFreeKeys(ctx context.Context, p *proposer, keep time.Duration) {
	retention.New(retention.Config{
		Submit: func(ctx context.Context, c fsm.Command) (fsm.Result, error) {
			return p.submit(ctx, &op{cmd: c})
		},
		Machine: n.machine, Clock: n.cfg.Clock, Keep: keep,
		Every: retention.SweepInterval(keep, nodeconfig.TestHooks(&n.cfg).FreeKeySweep), Log: n.cfg.Logger.Named("retention"),
	}).Run(ctx)
}
