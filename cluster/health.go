package cluster

import (
	"context"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/views"
)

// MaxHealthItems bounds each list of a PlacementReport; past it the report
// is Truncated.
const MaxHealthItems = views.MaxHealthItems

// MaxStaleThreshold bounds the threshold of PlacementHealth.
const MaxStaleThreshold = 24 * time.Hour

// PlacementReport is what the leader knows of placement problems
// (views.PlacementReport).
type PlacementReport = views.PlacementReport

// PlacementHealth reports unowned keys, stuck workers, groups below their
// MinWorkers and leases not renewed for longer than threshold (0: two
// thirds of each lease's TTL). Only the established leader answers (it
// alone knows renewal times): ErrNotLeader elsewhere.
func (n *Node) PlacementHealth(ctx context.Context, threshold time.Duration) (PlacementReport, error) {
	if threshold < 0 || threshold > MaxStaleThreshold {
		return PlacementReport{}, invalid("threshold", "%v is outside [0, %v]", threshold, MaxStaleThreshold)
	}
	p, err := n.proposer()
	if err != nil {
		return PlacementReport{}, err
	}
	if err := n.readBarrier(ctx, Linearizable); err != nil {
		return PlacementReport{}, err
	}
	groups, _ := n.machine.Groups()
	for _, g := range groups {
		p.stuck.Observe(g, n.machine.Get, n.machine.Control)
	}
	free, stuck, graces := p.stuck.Report()
	return views.Placement(n.machine, groups, free, stuck, graces, liveWorkers(n.workerMembers()), n.admission(), n.lessor.Stale(threshold), threshold), nil
}
