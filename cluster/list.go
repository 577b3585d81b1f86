package cluster

import (
	"context"
	"fmt"
	"sort"

	"github.com/tenure-io/tenure/fsm"
)

// LeasePage is one page of a lease listing (fsm.PageResult, with each
// lease as a reader sees it).
type LeasePage struct {
	Leases []LeaseView
	Index  uint64
	Next   string
}

// ListPage reads one page of the leases that match f (fsm.Machine.ListPage:
// at most p.Limit, ordered by key, after p.After). The state machine's read
// lock is held for this page only.
func (n *Node) ListPage(ctx context.Context, f fsm.Filter, p fsm.Page, c Consistency) (LeasePage, error) {
	if err := n.readBarrier(ctx, c); err != nil {
		return LeasePage{}, err
	}
	res := n.machine.ListPage(f, p)
	out := LeasePage{Leases: make([]LeaseView, len(res.Leases)), Index: res.Index, Next: res.Next}
	for i, l := range res.Leases {
		out.Leases[i] = n.view(l)
	}
	return out, nil
}

// GroupsPage reads one page of the groups, by name after after
// (fsm.Machine.GroupsPage): at most limit groups, the name the next page
// starts after ("" after the last page), and the placement index.
func (n *Node) GroupsPage(ctx context.Context, after string, limit int, c Consistency) ([]*fsm.Group, string, uint64, error) {
	if err := n.readBarrier(ctx, c); err != nil {
		return nil, "", 0, err
	}
	groups, next, index := n.machine.GroupsPage(after, limit)
	return groups, next, index, nil
}

// TokensPage lists one page of the tokens (never a secret) by accessor id
// after after (fsm.Machine.ACLTokensPage): at most limit, the id the next
// page starts after ("" after the last page), and the ACL index.
func (a ACL) TokensPage(ctx context.Context, after string, limit int, c Consistency) ([]*fsm.ACLToken, string, uint64, error) {
	if !a.n.cfg.ACLEnabled {
		return nil, "", 0, ErrACLDisabled
	}
	if err := a.n.readBarrier(ctx, c); err != nil {
		return nil, "", 0, err
	}
	tokens, next, index := a.n.machine.ACLTokensPage(after, limit)
	return tokens, next, index, nil
}

// GroupPage reads a group with one page of its keys (at most p.Limit,
// after p.After, in key order), as Group does for all of them; Next is
// the key the next page starts after ("" after the last page). Targets
// and Holds count every key of the group, so each page carries the
// workers' whole counts. A key for which visible (nil: every key) is
// false is left out of the page and of the counts, and counted in Hidden
// instead (over the whole group, as the counts are): a token sees no key,
// target, holder or token it may not read. ErrNotFound if the group does
// not exist.
func (n *Node) GroupPage(ctx context.Context, name string, p fsm.Page, c Consistency, visible func(key string) bool) (GroupView, error) {
	if err := n.readBarrier(ctx, c); err != nil {
		return GroupView{}, err
	}
	g := n.machine.Group(name) // never modified once stored
	if g == nil {
		return GroupView{}, fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	limit := max(p.Limit, 1)
	v := GroupView{Group: g, Drained: n.machine.DrainedWorkers(), Targets: map[string]int{}, Holds: map[string]int{}}
	start := 0
	if p.After != "" {
		start = sort.SearchStrings(g.Keys, p.After+"\x00")
	}
	for i, k := range g.Keys {
		if visible != nil && !visible(k) {
			v.Hidden++
			continue
		}
		lease := n.machine.Get(k)
		v.Targets[g.Assignment[k]]++
		if lease != nil && lease.Held {
			v.Holds[HeldBy(lease)]++
		}
		switch {
		case i < start:
		case len(v.Keys) < limit:
			v.Keys = append(v.Keys, KeyState{Key: k, Target: g.Assignment[k], Lease: lease, Control: n.machine.Control(k)})
		case v.Next == "":
			v.Next = v.Keys[len(v.Keys)-1].Key
		}
	}
	for _, w := range liveWorkers(n.Members()) {
		if w.Serves(name) {
			v.Workers = append(v.Workers, w)
		}
	}
	return v, nil
}

// HeldBy is the worker a held lease belongs to: the worker its metadata
// names (workers name themselves there), or its holder.
func HeldBy(l *fsm.Lease) string {
	if w := l.Metadata["worker"]; w != "" {
		return w
	}
	return l.Holder
}

// AssignmentView is one page of a group's plan (Node.AssignmentPage).
type AssignmentView struct {
	// Plan maps key to target worker id.
	Plan map[string]string
	// Next is the key the next page starts after, "" after the last page.
	Next string
	// Hidden counts the targets this page left out because the reader may
	// not see their keys; summed over every page, all such targets.
	Hidden int
	// Index is that of the group's last change, for blocking queries (of
	// the placement state when the group does not exist).
	Index uint64
}

// AssignmentPage returns one page of the target plan of a group — only
// the keys of worker when it is not empty — by key after p.After: at most
// p.Limit targets, the key the next page starts after ("" after the last
// page), and the index of the group's last change, for blocking queries.
// Keys for which visible (nil: every key) is false are left out and
// counted in Hidden.
func (n *Node) AssignmentPage(ctx context.Context, name, worker string, p fsm.Page, c Consistency, visible func(key string) bool) (AssignmentView, error) {
	if err := n.readBarrier(ctx, c); err != nil {
		return AssignmentView{}, err
	}
	g := n.machine.Group(name)
	if g == nil {
		return AssignmentView{Index: n.machine.GroupIndex()}, fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	plan, next, hidden := assignmentPage(g, worker, p.After, max(p.Limit, 1), visible)
	return AssignmentView{Plan: plan, Next: next, Hidden: hidden, Index: g.ModifyIndex}, nil
}

// assignmentPage returns the targets of g's keys after after (of worker
// only, when it is not empty): at most limit, examining at most
// fsm.PageScan × limit keys (at least 1024), the key the next page
// starts after ("" after the last key), and how many targets it left out
// because visible (nil: every key) is false for their keys.
func assignmentPage(g *fsm.Group, worker, after string, limit int, visible func(string) bool) (map[string]string, string, int) {
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
