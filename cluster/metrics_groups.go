package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
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
)

func describeGroups(ch chan<- *prometheus.Desc) {
	ch <- descGroupKeys
	ch <- descGroupStuck
	ch <- descGroupDraining
	ch <- descGroupOldestUnowned
	ch <- descGroupWorkers
	ch <- descGroupMaxPerWorker
	ch <- descGroupBusiestWorker
}

// collectGroups sends the placement metrics of every group.
func (n *Node) collectGroups(ch chan<- prometheus.Metric) {
	groups, _ := n.machine.Groups()
	if len(groups) == 0 {
		return
	}
	workers := liveWorkers(n.Members())
	var oldest map[string]float64
	if p := n.leading.Load(); p != nil {
		free, _, _ := p.stuck.report()
		oldest = make(map[string]float64)
		for _, k := range free {
			oldest[k.Group] = max(oldest[k.Group], k.For.Seconds())
		}
	}
	for _, g := range groups {
		var byTarget, byOther, unowned int
		perHolder := make(map[string]int)
		for _, k := range g.Keys {
			if n.machine.Control(k).Disabled {
				continue
			}
			l := n.machine.Get(k)
			if l != nil && l.Held {
				perHolder[l.Holder]++
			}
			switch {
			case l == nil || !l.Held:
				unowned++
			case g.Assignment[k] != "" && holds(l.Holder, g.Assignment[k]):
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
		for _, w := range workers {
			if !w.Serves(g.Name) {
				continue
			}
			serving[w.Meta.ID] = true
			if w.Meta.Draining || n.machine.Drained(w.Meta.ID) {
				draining[w.Meta.ID] = true
			}
		}
		ch <- prometheus.MustNewConstMetric(descGroupDraining, prometheus.GaugeValue, float64(len(draining)), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupWorkers, prometheus.GaugeValue, float64(len(serving)), g.Name)
		ch <- prometheus.MustNewConstMetric(descGroupMaxPerWorker, prometheus.GaugeValue, float64(g.MaxPerWorker), g.Name)
		busiest := 0
		for _, c := range perHolder {
			busiest = max(busiest, c)
		}
		ch <- prometheus.MustNewConstMetric(descGroupBusiestWorker, prometheus.GaugeValue, float64(busiest), g.Name)
		if oldest != nil {
			ch <- prometheus.MustNewConstMetric(descGroupOldestUnowned, prometheus.GaugeValue, oldest[g.Name], g.Name)
		}
	}
}
