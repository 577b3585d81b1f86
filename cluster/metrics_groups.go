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
)

func describeGroups(ch chan<- *prometheus.Desc) {
	ch <- descGroupKeys
	ch <- descGroupStuck
	ch <- descGroupDraining
	ch <- descGroupOldestUnowned
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
		for _, k := range g.Keys {
			if n.machine.Control(k).Disabled {
				continue
			}
			l := n.machine.Get(k)
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
		for _, w := range workers {
			if w.serves(g.Name) && (w.Meta.Draining || n.machine.Drained(w.Meta.ID)) {
				draining[w.Meta.ID] = true
			}
		}
		ch <- prometheus.MustNewConstMetric(descGroupDraining, prometheus.GaugeValue, float64(len(draining)), g.Name)
		if oldest != nil {
			ch <- prometheus.MustNewConstMetric(descGroupOldestUnowned, prometheus.GaugeValue, oldest[g.Name], g.Name)
		}
	}
}
