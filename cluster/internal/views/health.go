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

// GroupHealth sums up one group: its keys, its controls and the workers
// that may take its keys, so that the cause of unowned keys can be named.
type GroupHealth struct {
	Group string
	// Keys counts the keys of the group; DisabledKeys those disabled,
	// ProhibitedKeys those that prohibit at least one holder.
	Keys, DisabledKeys, ProhibitedKeys int
	// UnownedKeys counts the enabled keys that no lease holds, and
	// UnplannedKeys those of them that the plan targets at no worker.
	UnownedKeys, UnplannedKeys int
	// LiveWorkers counts the workers alive on gossip that serve the group;
	// Workers those that may be given keys (as GroupBelowMin counts them).
	// Draining (announced or drained by an operator), Stuck and
	// NotAdmitted count the live workers held back for each reason, in
	// that order: a worker is counted once.
	LiveWorkers, Workers, Draining, Stuck, NotAdmitted int
	MinWorkers, MaxPerWorker                           int
	// Room is the most keys the Workers may be given together, each bound
	// by its capacity, MaxPerWorker (when set) and the enabled keys, as
	// the balancer bounds it; RoomMin and RoomMax the smallest and largest
	// bound of one worker.
	Room, RoomMin, RoomMax int
}

// ControlledKey is a key of a group that is disabled or prohibits holders.
type ControlledKey struct {
	Group, Key string
	Disabled   bool
	Prohibited []string
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
	// Groups sums up every group (never truncated).
	Groups []GroupHealth
	// Controlled are the disabled keys of groups and those that prohibit
	// holders. They do not make the report not OK: an operator set them.
	Controlled []ControlledKey
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
		gh := groupHealth(m, g, workers, admit)
		r.Groups = append(r.Groups, gh)
		if gh.Workers < g.MinWorkers {
			r.BelowMin = append(r.BelowMin, GroupBelowMin{Group: g.Name, Workers: gh.Workers, MinWorkers: g.MinWorkers})
		}
		for _, k := range g.Keys {
			if c := m.Control(k); c.Disabled || len(c.Prohibited) > 0 {
				r.Controlled = append(r.Controlled, ControlledKey{Group: g.Name, Key: k, Disabled: c.Disabled, Prohibited: c.Prohibited})
			}
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
	r.Controlled, r.Truncated = truncate(r.Controlled, r.Truncated)
	return r
}

// groupHealth counts the keys and workers of g. A worker may be given keys
// when it is alive, serves g, is not draining or drained, is admitted
// (admit nil admits every one) and is not stuck; an id announced twice
// counts once, with its first capacity, as the balancer counts it.
func groupHealth(m *fsm.Machine, g *fsm.Group, workers []membership.Member, admit func(worker, group string) bool) GroupHealth {
	h := GroupHealth{Group: g.Name, Keys: len(g.Keys), MinWorkers: g.MinWorkers, MaxPerWorker: g.MaxPerWorker}
	for _, k := range g.Keys {
		c := m.Control(k)
		if len(c.Prohibited) > 0 {
			h.ProhibitedKeys++
		}
		if c.Disabled {
			h.DisabledKeys++
			continue
		}
		if l := m.Get(k); l == nil || !l.Held {
			h.UnownedKeys++
			if g.Assignment[k] == "" {
				h.UnplannedKeys++
			}
		}
	}
	enabled := h.Keys - h.DisabledKeys
	seen := make(map[string]bool)
	for _, w := range workers {
		id := w.Meta.ID
		if !w.Serves(g.Name) || seen[id] {
			continue
		}
		seen[id] = true
		h.LiveWorkers++
		switch {
		case w.Meta.Draining || m.Drained(id):
			h.Draining++
		case g.IsStuck(id):
			h.Stuck++
		case admit != nil && !admit(id, g.Name):
			h.NotAdmitted++
		default:
			room := enabled
			if w.Meta.Capacity > 0 {
				room = min(room, w.Meta.Capacity)
			}
			if g.MaxPerWorker > 0 {
				room = min(room, g.MaxPerWorker)
			}
			if h.Workers == 0 || room < h.RoomMin {
				h.RoomMin = room
			}
			h.RoomMax = max(h.RoomMax, room)
			h.Room += room
			h.Workers++
		}
	}
	return h
}

func truncate[T any](s []T, was bool) ([]T, bool) {
	if len(s) > MaxHealthItems {
		return s[:MaxHealthItems], true
	}
	return s, was
}
