package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/fsm"
)

// Placement metrics, read at scrape time from the local state machine and
// gossip view (and, for the oldest unowned key, the leader's tracking).
var (
	descGroupKeys = prometheus.NewDesc("tenure_group_keys",
		"Enabled keys of a group by state: owned_by_target (held by the worker the plan targets), owned_by_other (held by anyone else), unowned (free).",
		[]string{"group", "state"}, nil)
	descGroupStuck = prometheus.NewDesc("tenure_group_stuck_workers",
		"Workers of a group that the balancer marked stuck.", []string{"group"}, nil)
	descGroupDraining = prometheus.NewDesc("tenure_group_draining_workers",
		"Live workers of a group that are draining (announced) or drained (by an operator).", []string{"group"}, nil)
	descGroupOldestUnowned = prometheus.NewDesc("tenure_group_oldest_unowned_seconds",
		"Seconds since the oldest free key of a group became free, on the leader's clock since its promotion (leader only; 0 when none is free).",
		[]string{"group"}, nil)
	descGroupWorkers = prometheus.NewDesc("tenure_group_workers",
		"Live workers (in this server's gossip view) that serve a group.", []string{"group"}, nil)
	descGroupMaxPerWorker = prometheus.NewDesc("tenure_group_max_keys_per_worker",
		"A group's cap on the keys one worker is given (max-per-worker; 0: no cap beyond an even spread).", []string{"group"}, nil)
	descGroupBusiestWorker = prometheus.NewDesc("tenure_group_busiest_worker_keys",
		"Most keys of a group that one holder has: with tenure_group_max_keys_per_worker, the load against the capacity without a label per worker.", []string{"group"}, nil)
	descGroupDisabled = prometheus.NewDesc("tenure_group_disabled_keys",
		"Keys of a group that an operator disabled: nobody may acquire them, and the plan gives them no owner.", []string{"group"}, nil)
	descGroupProhibited = prometheus.NewDesc("tenure_group_prohibited_keys",
		"Keys of a group on which an operator prohibited at least one holder.", []string{"group"}, nil)
	descGroupMinWorkers = prometheus.NewDesc("tenure_group_min_workers",
		"A group's minimum of workers that may be given keys (min-workers; 0: no minimum).", []string{"group"}, nil)
	descGroupRelativeLoad = prometheus.NewDesc("tenure_group_worker_relative_load",
		"On the leader, for a group balanced by load or whose keys report loads: a worker's load (the loads of the keys the plan targets at it) over its fair share of the group's load, in proportion to the load it can carry; 1 is its share, and for a group balanced by load the balancer keeps it within the group's imbalance.",
		[]string{"group", "worker"}, nil)
	descGroupImbalance = prometheus.NewDesc("tenure_group_load_imbalance",
		"On the leader: the largest tenure_group_worker_relative_load of a group's workers.", []string{"group"}, nil)
	descGroupEligible = prometheus.NewDesc("tenure_group_eligible_workers",
		"Live workers (in this server's gossip view) that may be given keys of a group: serving it, not draining or drained, admitted, not stuck; compare with tenure_group_min_workers.",
		[]string{"group"}, nil)
)

// Placement is what the group metrics read at scrape time: the groups and
// leases of the local state machine (*fsm.Machine has the first four
// methods), the gossip view and the leader's tracking. Its methods must be
// safe for concurrent use.
type Placement interface {
	Groups() ([]*fsm.Group, uint64)
	Get(key string) *fsm.Lease
	Control(key string) fsm.KeyControl
	Drained(worker string) bool
	// Workers lists the live workers of the node's gossip view.
	Workers() []membership.Member
	// OldestUnowned is, on the leader, how long the oldest free key of
	// each group has been free (counted from its promotion at most); nil
	// on any other node.
	OldestUnowned() map[string]time.Duration
	// Admits reports whether worker may be given keys of group (always
	// true with ACLs off).
	Admits(worker, group string) bool
	// RelativeLoads is, on the leader, for a group balanced by load or
	// whose keys report loads, each of the workers that may own its keys:
	// its load over its fair share (placement.RelativeLoads); nil
	// otherwise.
	RelativeLoads(g *fsm.Group, workers []membership.Member) map[string]float64
}

// collectGroups sends the placement metrics of every group.
func collectGroups(ch chan<- prometheus.Metric, p Placement) {
	groups, _ := p.Groups()
	if len(groups) == 0 {
		return
	}
	workers, oldest := p.Workers(), p.OldestUnowned()
	for _, g := range groups {
		var byTarget, byOther, unowned, disabled, prohibited int
		perHolder := make(map[string]int)
		for _, k := range g.Keys {
			c := p.Control(k)
			if len(c.Prohibited) > 0 {
				prohibited++
			}
			if c.Disabled {
				disabled++
				continue
			}
			l := p.Get(k)
			if l != nil && l.Held {
				perHolder[l.Holder]++
			}
			switch {
			case l == nil || !l.Held:
				unowned++
			case g.Assignment[k] != "" && placement.Holds(l.Holder, g.Assignment[k]):
				byTarget++
			default:
				byOther++
			}
		}
		ch <- prometheus.MustNewConstMetric(descGroupKeys, prometheus.GaugeValue, float64(byTarget), g.Name, "owned_by_target")
		ch <- prometheus.MustNewConstMetric(descGroupKeys, prometheus.GaugeValue, float64(byOther), g.Name, "owned_by_other")
		ch <- prometheus.MustNewConstMetric(descGroupKeys, prometheus.GaugeValue, float64(unowned), g.Name, "unowned")
		ch <- prometheus.MustNewConstMetric(descGroupStuck, prometheus.GaugeValue, float64(len(g.Stuck)), g.Name)
		draining := make(map[string]bool)
		serving := make(map[string]bool)
		eligible := make(map[string]bool)
		for _, w := range workers {
			if !w.Serves(g.Name) {
				continue
			}
			id := w.Meta.ID
			serving[id] = true
			if w.Meta.Draining || p.Drained(id) {
				draining[id] = true
			} else if !g.IsStuck(id) && p.Admits(id, g.Name) {
				eligible[id] = true
			}
		}
		ch <- prometheus.MustNewConstMetric(descGroupDisabled, prometheus.GaugeValue, float64(disabled), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupProhibited, prometheus.GaugeValue, float64(prohibited), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupMinWorkers, prometheus.GaugeValue, float64(g.MinWorkers), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupEligible, prometheus.GaugeValue, float64(len(eligible)), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupDraining, prometheus.GaugeValue, float64(len(draining)), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupWorkers, prometheus.GaugeValue, float64(len(serving)), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupMaxPerWorker, prometheus.GaugeValue, float64(g.MaxPerWorker), g.Name)
		busiest := 0
		for _, c := range perHolder {
			busiest = max(busiest, c)
		}
		ch <- prometheus.MustNewConstMetric(descGroupBusiestWorker, prometheus.GaugeValue, float64(busiest), g.Name)
		if oldest != nil {
			ch <- prometheus.MustNewConstMetric(descGroupOldestUnowned, prometheus.GaugeValue, oldest[g.Name].Seconds(), g.Name)
		}
		if rel := p.RelativeLoads(g, workers); len(rel) > 0 {
			most := 0.0
			for id, r := range rel {
				ch <- prometheus.MustNewConstMetric(descGroupRelativeLoad, prometheus.GaugeValue, r, g.Name, id)
				most = max(most, r)
			}
			ch <- prometheus.MustNewConstMetric(descGroupImbalance, prometheus.GaugeValue, most, g.Name)
		}
	}
}
