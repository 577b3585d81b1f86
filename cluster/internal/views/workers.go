package views

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
)

// WorkerKeys are the keys of one group that a worker is the target of and
// that it holds, each sorted.
type WorkerKeys struct {
	Group   string
	Targets []string
	Holds   []string
}

// WorkerView is a worker as the operator sees it: what gossip says of it
// (Status "alive" or "dead"; "absent" when gossip does not know it but the
// plan, a lease or a drain mark names it), the operator's drain mark, and
// its keys per group.
type WorkerView struct {
	ID       string
	Status   string
	Addr     string
	Groups   []string
	Capacity int
	// Draining: the worker announced it is draining (it is stopping).
	Draining bool
	// Drained: an operator drained it (DrainWorker).
	Drained bool
	Keys    []WorkerKeys
}

// Workers lists every worker of members (what gossip knows) and every
// worker that the plan, a held lease of a group key or a drain mark of m
// names, sorted by id. Several processes announcing one id are one entry:
// alive when one of them is.
//
// It answers one page: the workers whose ids come after after, at most
// limit of them (below 1: all), and the id the next page starts after (""
// after the last). With id, the page holds only that worker, if anything
// knows it. The ids of all workers are gathered first (a set of strings);
// the views, with their keys, are built only for the page.
func Workers(sm *fsm.Machine, members []membership.Member, id, after string, limit int) ([]WorkerView, string) {
	groups, _ := sm.Groups()
	drained := sm.DrainedWorkers()

	ids := map[string]bool{}
	for _, m := range members {
		if m.Meta.Role == "worker" && m.Meta.ID != "" {
			ids[m.Meta.ID] = true
		}
	}
	for _, id := range drained {
		ids[id] = true
	}
	for _, g := range groups {
		for _, k := range g.Keys {
			if t := g.Assignment[k]; t != "" {
				ids[t] = true
			}
			if l := sm.Get(k); l != nil && l.Held {
				ids[HeldBy(l)] = true
			}
		}
	}
	page := make([]string, 0, len(ids))
	for w := range ids {
		if w > after && (id == "" || w == id) {
			page = append(page, w)
		}
	}
	sort.Strings(page)
	next := ""
	if limit > 0 && len(page) > limit {
		page = page[:limit]
		next = page[limit-1]
	}

	// byID holds the views of the page's workers, and no other.
	byID := make(map[string]*WorkerView, len(page))
	for _, id := range page {
		byID[id] = &WorkerView{ID: id, Status: "absent"}
	}
	for _, m := range members {
		v := byID[m.Meta.ID]
		if m.Meta.Role != "worker" || v == nil {
			continue
		}
		if v.Status == "alive" && m.Status != "alive" {
			continue // a dead instance does not hide a live one
		}
		v.Status, v.Addr, v.Capacity, v.Draining = m.Status, m.Addr, m.Meta.Capacity, m.Meta.Draining
		v.Groups = append([]string(nil), m.Meta.Groups...)
	}
	for _, id := range drained {
		if v := byID[id]; v != nil {
			v.Drained = true
		}
	}
	for _, g := range groups {
		per := map[string]*WorkerKeys{}
		keysOf := func(id string) *WorkerKeys {
			if per[id] == nil {
				per[id] = &WorkerKeys{Group: g.Name, Targets: []string{}, Holds: []string{}}
			}
			return per[id]
		}
		for _, k := range g.Keys {
			if t := g.Assignment[k]; byID[t] != nil {
				keysOf(t).Targets = append(keysOf(t).Targets, k)
			}
			if l := sm.Get(k); l != nil && l.Held {
				if w := HeldBy(l); byID[w] != nil {
					keysOf(w).Holds = append(keysOf(w).Holds, k)
				}
			}
		}
		for id, wk := range per {
			sort.Strings(wk.Targets)
			sort.Strings(wk.Holds)
			v := byID[id]
			v.Keys = append(v.Keys, *wk)
		}
	}
	out := make([]WorkerView, 0, len(page))
	for _, id := range page {
		v := byID[id]
		// Groups it announced, and those it has keys of (sorted, once).
		for _, k := range v.Keys {
			v.Groups = append(v.Groups, k.Group)
		}
		v.Groups = sortedUnique(v.Groups)
		sort.Slice(v.Keys, func(i, j int) bool { return v.Keys[i].Group < v.Keys[j].Group })
		out = append(out, *v)
	}
	return out, next
}

func sortedUnique(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return slices.Compact(out)
}

// KnownWorker reports whether anything in the cluster knows worker: a
// gossip member (alive, or dead or departed lately) with that id, a worker
// registration, a drain mark, a target in a group's plan, or a held lease
// that names it.
func KnownWorker(sm *fsm.Machine, members []membership.Member, worker string) bool {
	for _, m := range members {
		if m.Meta.Role == "worker" && m.Meta.ID == worker {
			return true
		}
	}
	if sm.WorkerRegistration(worker) != nil || sm.Drained(worker) {
		return true
	}
	groups, _ := sm.Groups()
	for _, g := range groups {
		for _, t := range g.Assignment {
			if t == worker {
				return true
			}
		}
	}
	for _, l := range sm.Held() {
		if HeldBy(l) == worker || strings.HasPrefix(l.Holder, worker+"#") {
			return true
		}
	}
	return false
}

// DrainWarnings says, for each group of worker, when draining it leaves
// the group without a live worker of members (the live workers) that the
// balancer may give keys to (not draining, not drained, admitted: admit
// nil admits every one): its keys will have no owner.
func DrainWarnings(sm *fsm.Machine, members []membership.Member, worker string, admit func(worker, group string) bool) []string {
	var groups []string
	for _, m := range members {
		if m.Meta.ID == worker {
			groups = append(groups, m.Meta.Groups...)
		}
	}
	all, _ := sm.Groups()
	for _, g := range all {
		for _, t := range g.Assignment {
			if t == worker {
				groups = append(groups, g.Name)
				break
			}
		}
	}
	var out []string
	for _, g := range sortedUnique(groups) {
		others := 0
		for _, m := range members {
			if m.Meta.ID != worker && m.Serves(g) && !m.Meta.Draining && !sm.Drained(m.Meta.ID) &&
				(admit == nil || admit(m.Meta.ID, g)) {
				others++
			}
		}
		if others == 0 {
			out = append(out, fmt.Sprintf("worker %q is the last live worker of group %q that is not draining: its keys will have no owner until another worker joins or this one is undrained", worker, g))
		}
	}
	return out
}
