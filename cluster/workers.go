package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// leaseWorker is the worker id a held lease names: its "worker" metadata,
// else its holder.
func leaseWorker(l *fsm.Lease) string {
	if w := l.Metadata["worker"]; w != "" {
		return w
	}
	return l.Holder
}

// Workers lists every worker that gossip knows (alive, or dead or departed
// within the last deadMemberTTL) and every worker that the plan, a held
// lease of a group key or a drain mark names, sorted by id, with the
// placement and lease index for blocking queries. Several processes
// announcing one id are one entry: alive when one of them is.
//
// It answers one page: the workers whose ids come after after, at most
// limit of them (below 1: all), and the id the next page starts after (""
// after the last). With id, the page holds only that worker, if anything
// knows it. The ids of all workers are gathered first (a set of strings);
// the views, with their keys, are built only for the page.
func (n *Node) Workers(ctx context.Context, c Consistency, id, after string, limit int) ([]WorkerView, string, uint64, error) {
	if err := n.readBarrier(ctx, c); err != nil {
		return nil, "", 0, err
	}
	index := max(n.machine.GroupIndex(), n.LeaseIndex())
	members := n.Members()
	groups, _ := n.machine.Groups()
	drained := n.machine.DrainedWorkers()

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
			if l := n.machine.Get(k); l != nil && l.Held {
				ids[leaseWorker(l)] = true
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
	in := make(map[string]bool, len(page))
	for _, id := range page {
		in[id] = true
	}

	byID := map[string]*WorkerView{}
	get := func(id string) *WorkerView {
		v := byID[id]
		if v == nil {
			v = &WorkerView{ID: id, Status: "absent"}
			byID[id] = v
		}
		return v
	}
	for _, id := range page {
		get(id)
	}
	for _, m := range members {
		if m.Meta.Role != "worker" || !in[m.Meta.ID] {
			continue
		}
		v := get(m.Meta.ID)
		if v.Status == "alive" && m.Status != "alive" {
			continue // a dead instance does not hide a live one
		}
		v.Status, v.Addr, v.Capacity, v.Draining = m.Status, m.Addr, m.Meta.Capacity, m.Meta.Draining
		v.Groups = append([]string(nil), m.Meta.Groups...)
	}
	for _, id := range drained {
		if in[id] {
			get(id).Drained = true
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
			if t := g.Assignment[k]; in[t] {
				keysOf(t).Targets = append(keysOf(t).Targets, k)
			}
			if l := n.machine.Get(k); l != nil && l.Held {
				if w := leaseWorker(l); in[w] {
					keysOf(w).Holds = append(keysOf(w).Holds, k)
				}
			}
		}
		for id, wk := range per {
			sort.Strings(wk.Targets)
			sort.Strings(wk.Holds)
			v := get(id)
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
	return out, next, index, nil
}

func sortedUnique(s []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// knownWorker reports whether anything in the cluster knows worker: a
// gossip member (alive, or dead or departed lately) with that id, a worker
// registration, a drain mark, a target in a group's plan, or a held lease
// that names it.
func (n *Node) knownWorker(worker string) bool {
	for _, m := range n.Members() {
		if m.Meta.Role == "worker" && m.Meta.ID == worker {
			return true
		}
	}
	if n.machine.WorkerRegistration(worker) != nil || n.machine.Drained(worker) {
		return true
	}
	groups, _ := n.machine.Groups()
	for _, g := range groups {
		for _, t := range g.Assignment {
			if t == worker {
				return true
			}
		}
	}
	for _, l := range n.machine.Held() {
		if leaseWorker(l) == worker || strings.HasPrefix(l.Holder, worker+"#") {
			return true
		}
	}
	return false
}

// knownKey reports whether key exists for the cluster: it has a lease
// record (held or free), it is a key of a group, or it has controls. The
// routes that disable or prohibit a key refuse an unknown one (a typo
// would otherwise control nothing, silently) unless forced.
func (n *Node) knownKey(key string) bool {
	if n.machine.Get(key) != nil {
		return true
	}
	if ctl := n.machine.Control(key); ctl.Disabled || len(ctl.Prohibited) > 0 {
		return true
	}
	groups, _ := n.machine.Groups()
	for _, g := range groups {
		if _, ok := g.Assignment[key]; ok {
			return true
		}
		for _, k := range g.Keys {
			if k == key {
				return true
			}
		}
	}
	return false
}

// drainWarnings says, for each group of worker, when draining it leaves
// the group without a live worker that the balancer may give keys to (not
// draining, not drained, admitted): its keys will have no owner.
func (n *Node) drainWarnings(worker string) []string {
	members := liveWorkers(n.Members())
	var groups []string
	for _, m := range members {
		if m.Meta.ID == worker {
			groups = append(groups, m.Meta.Groups...)
		}
	}
	all, _ := n.machine.Groups()
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
			if m.Meta.ID != worker && m.Serves(g) && !m.Meta.Draining && !n.machine.Drained(m.Meta.ID) &&
				(!n.cfg.ACLEnabled || n.admitWorker(m.Meta.ID, g)) {
				others++
			}
		}
		if others == 0 {
			out = append(out, fmt.Sprintf("worker %q is the last live worker of group %q that is not draining: its keys will have no owner until another worker joins or this one is undrained", worker, g))
		}
	}
	return out
}

// unknownWorker is the error of a drain of a worker nothing knows.
func unknownWorker(worker string) error {
	return fmt.Errorf("worker %q is unknown (no gossip member, registration, drain mark, target or lease names it; force=true drains it anyway): %w", worker, ErrNotFound)
}

// unknownKey is the error of a control on a key nothing knows.
func unknownKey(key string) error {
	return fmt.Errorf("key %q is unknown (no lease, group or control names it; force=true sets its controls anyway): %w", key, ErrNotFound)
}
