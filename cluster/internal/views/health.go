package views

import (
	"sort"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/lessor"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/fsm"
)

// MaxHealthItems bounds each list of a PlacementReport; past it the report
// is Truncated.
const MaxHealthItems = 1000

// GroupBelowMin is a group with fewer workers that may take keys than its
// MinWorkers.
type GroupBelowMin struct {
	Group string
	// Workers counts the live workers of the group that may be given keys:
	// alive on gossip, not draining or drained, admitted, not stuck.
	Workers, MinWorkers int
}

// StaleLease is a held lease that its holder has not renewed for longer
// than the report's threshold.
type StaleLease struct {
	Key, Holder       string
	Token             uint64
	TTL, SinceRenewal time.Duration
}

// PlacementReport is what the leader knows of placement problems. Durations
// count on the leader's clock from its promotion at most.
type PlacementReport struct {
	// Unowned are the enabled keys of groups that no lease holds. Overdue
	// ones have been free for longer than their group's stuck grace.
	Unowned []placement.UnownedKey
	// Overdue counts the overdue keys of Unowned.
	Overdue  int
	Stuck    []placement.StuckWorker
	BelowMin []GroupBelowMin
	Stale    []StaleLease
	// Threshold is the stale threshold used; 0 means two thirds of each
	// lease's TTL.
	Threshold time.Duration
	// Truncated: a list was cut at MaxHealthItems.
	Truncated bool
}

// OK reports whether nothing is wrong: no overdue unowned key, no stuck
// worker, no group below its minimum, no stale lease.
func (r PlacementReport) OK() bool {
	return r.Overdue == 0 && len(r.Stuck) == 0 && len(r.BelowMin) == 0 && len(r.Stale) == 0
}

// Placement is the report of the groups of m: free are the unowned keys,
// stuck the stuck workers and graces the stuck grace of each group, as the
// leader's stuck tracker reports them after it has observed groups; workers
// are the live workers (admit nil admits every one to every group), and
// stale the leases the lessor has not seen renewed within threshold.
func Placement(m *fsm.Machine, groups []*fsm.Group, free []placement.UnownedKey, stuck []placement.StuckWorker, graces map[string]time.Duration,
	workers []membership.Member, admit func(worker, group string) bool, stale []lessor.StaleEntry, threshold time.Duration) PlacementReport {
	r := PlacementReport{Threshold: threshold}
	byName := make(map[string]*fsm.Group, len(groups))
	for _, g := range groups {
		byName[g.Name] = g
	}
	for _, k := range free {
		g := byName[k.Group]
		if g == nil {
			continue
		}
		k.Target = g.Assignment[k.Key]
		k.Overdue = k.For > graces[k.Group]
		if k.Overdue {
			r.Overdue++
		}
		r.Unowned = append(r.Unowned, k)
	}
	for _, s := range stuck {
		if byName[s.Group] != nil { // not of a group deleted since
			r.Stuck = append(r.Stuck, s)
		}
	}
	for _, g := range groups {
		if g.MinWorkers == 0 {
			continue
		}
		ids := make(map[string]bool)
		for _, w := range workers {
			id := w.Meta.ID
			if w.Serves(g.Name) && !w.Meta.Draining && !m.Drained(id) && !g.IsStuck(id) &&
				(admit == nil || admit(id, g.Name)) {
				ids[id] = true
			}
		}
		if len(ids) < g.MinWorkers {
			r.BelowMin = append(r.BelowMin, GroupBelowMin{Group: g.Name, Workers: len(ids), MinWorkers: g.MinWorkers})
		}
	}
	for _, e := range stale {
		l := m.Get(e.Key)
		if l == nil || !l.Held || l.Token != e.Token {
			continue
		}
		r.Stale = append(r.Stale, StaleLease{Key: e.Key, Holder: l.Holder, Token: e.Token, TTL: e.TTL, SinceRenewal: e.SinceRenewal})
	}
	sort.Slice(r.Stale, func(i, j int) bool { return r.Stale[i].Key < r.Stale[j].Key })
	r.Unowned, r.Truncated = truncate(r.Unowned, r.Truncated)
	r.Stuck, r.Truncated = truncate(r.Stuck, r.Truncated)
	r.BelowMin, r.Truncated = truncate(r.BelowMin, r.Truncated)
	r.Stale, r.Truncated = truncate(r.Stale, r.Truncated)
	return r
}

func truncate[T any](s []T, was bool) ([]T, bool) {
	if len(s) > MaxHealthItems {
		return s[:MaxHealthItems], true
	}
	return s, was
}
