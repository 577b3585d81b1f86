package views

import (
	"slices"
	"sort"

	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
)

// KeyState is one key of a group as an operator sees it: the balancer's
// target and the lease's actual holder.
type KeyState struct {
	Key     string
	Target  string // worker id, "" when the key has none
	Lease   *fsm.Lease
	Control fsm.KeyControl
	// Load is the leader's decayed average of the key's reported load;
	// nil when it has none (no report, or not read on the leader).
	Load *float64
}

// Loads are the decayed averages of the loads that renewals reported, as
// the leader keeps them (placement.Loads): per key, and per worker id its
// total.
type Loads interface {
	Key(key string) (float64, bool)
	Worker(id string) (float64, bool)
}

// GroupView is a group with its keys' targets, owners and controls.
type GroupView struct {
	*fsm.Group
	Keys []KeyState
	// Workers are the live gossip workers of the group.
	Workers []membership.Member
	Drained []string
	// Targets and Holds count, by worker id, the keys of the whole group
	// that target it and that it holds (HeldBy), and Next is the key the
	// next page of Keys starts after: GroupPage sets them.
	Targets, Holds map[string]int
	Next           string
	// Hidden is the number of the group's keys that GroupPage left out
	// because the reader may not see them.
	Hidden int
	// KeyLoads sums, by worker id, the loads of the keys of the whole group
	// that it holds and whose load the leader knows; Totals are the
	// workers' reported totals. Both are nil unless read on the leader.
	KeyLoads, Totals map[string]float64
}

// GroupPage is g with one page of its keys (at most p.Limit, after
// p.After, in key order); Next is the key the next page starts after (""
// after the last page). Targets and Holds count every key of the group,
// so each page carries the workers' whole counts. A key for which visible
// (nil: every key) is false is left out of the page and of the counts,
// and counted in Hidden instead (over the whole group, as the counts
// are).
//
// loads, when not nil (on the leader), adds each key's load, each worker's
// sum of its keys' loads and each live worker's reported total.
func GroupPage(m *fsm.Machine, g *fsm.Group, p fsm.Page, visible func(key string) bool, live []membership.Member, loads Loads) GroupView {
	limit := max(p.Limit, 1)
	v := GroupView{Group: g, Drained: m.DrainedWorkers(), Targets: map[string]int{}, Holds: map[string]int{}}
	if loads != nil {
		v.KeyLoads, v.Totals = map[string]float64{}, map[string]float64{}
	}
	start := 0
	if p.After != "" {
		start = sort.SearchStrings(g.Keys, p.After+"\x00")
	}
	for i, k := range g.Keys {
		if visible != nil && !visible(k) {
			v.Hidden++
			continue
		}
		lease := m.Get(k)
		v.Targets[g.Assignment[k]]++
		var load *float64
		if loads != nil {
			if x, ok := loads.Key(k); ok {
				load = &x
			}
		}
		if lease != nil && lease.Held {
			v.Holds[HeldBy(lease)]++
			if load != nil {
				v.KeyLoads[HeldBy(lease)] += *load
			}
		}
		switch {
		case i < start:
		case len(v.Keys) < limit:
			v.Keys = append(v.Keys, KeyState{Key: k, Target: g.Assignment[k], Lease: lease, Control: m.Control(k), Load: load})
		case v.Next == "":
			v.Next = v.Keys[len(v.Keys)-1].Key
		}
	}
	for _, w := range live {
		if w.Serves(g.Name) {
			v.Workers = append(v.Workers, w)
			if loads == nil {
				continue
			}
			if x, ok := loads.Worker(w.Meta.ID); ok {
				v.Totals[w.Meta.ID] = x
			}
		}
	}
	return v
}

// HeldBy is the worker a held lease belongs to: the worker its metadata
// names (workers name themselves there), or its holder.
func HeldBy(l *fsm.Lease) string {
	if w := l.Metadata["worker"]; w != "" {
		return w
	}
	return l.Holder
}

// AssignmentPage returns the targets of g's keys after after (of worker
// only, when it is not empty): at most limit, examining at most
// fsm.PageScan × limit keys (at least 1024), the key the next page
// starts after ("" after the last key), and how many targets it left out
// because visible (nil: every key) is false for their keys.
func AssignmentPage(g *fsm.Group, worker, after string, limit int, visible func(string) bool) (map[string]string, string, int) {
	scan := max(limit*fsm.PageScan, 1024)
	start := 0
	if after != "" {
		start = sort.SearchStrings(g.Keys, after+"\x00")
	}
	out := make(map[string]string)
	examined, last, hidden := 0, "", 0
	for _, k := range g.Keys[start:] {
		if len(out) == limit || examined == scan {
			return out, last, hidden
		}
		examined++
		last = k
		if w, ok := g.Assignment[k]; ok && (worker == "" || w == worker) {
			if visible != nil && !visible(k) {
				hidden++
				continue
			}
			out[k] = w
		}
	}
	return out, "", hidden
}

// PreparePage returns the entries of g.Prepare (of worker only, when it
// is not empty) whose keys fall on the page of AssignmentPage that
// started after after and ended at next ("": the last page), leaving out
// keys for which visible (nil: every key) is false.
func PreparePage(g *fsm.Group, worker, after, next string, visible func(string) bool) map[string]string {
	var out map[string]string
	for k, w := range g.Prepare {
		if k <= after && after != "" || next != "" && k > next || worker != "" && w != worker || visible != nil && !visible(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[k] = w
	}
	return out
}

// KnownKey reports whether key exists for the cluster: it has a lease
// record (held or free), it is a key of a group, or it has controls. The
// routes that disable or prohibit a key refuse an unknown one (a typo
// would otherwise control nothing, silently) unless forced.
func KnownKey(m *fsm.Machine, key string) bool {
	if m.Get(key) != nil {
		return true
	}
	if ctl := m.Control(key); ctl.Disabled || len(ctl.Prohibited) > 0 {
		return true
	}
	groups, _ := m.Groups()
	for _, g := range groups {
		if _, ok := g.Assignment[key]; ok || slices.Contains(g.Keys, key) {
			return true
		}
	}
	return false
}
