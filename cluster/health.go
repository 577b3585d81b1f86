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

// GroupBelowMin is a group with fewer workers that may take keys than its
// MinWorkers.
type GroupBelowMin = views.GroupBelowMin

// StaleLease is a held lease that its holder has not renewed for longer
// than the report's threshold.
type StaleLease = views.StaleLease

// GroupHealth sums up one group's keys, controls and workers
// (views.GroupHealth).
type GroupHealth = views.GroupHealth

// ControlledKey is a disabled key of a group, or one that prohibits
// holders.
type ControlledKey = views.ControlledKey

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
	return views.Placement(n.machine, groups, free, stuck, graces, liveWorkers(n.Members()), n.admission(), n.lessor.Stale(threshold), threshold), nil
}
