package cluster

import (
	"context"
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/views"
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

// GroupPage reads a group with one page of its keys (at most p.Limit,
// after p.After), as views.GroupPage builds it: the keys for which visible
// (nil: every key) is false are left out of the page and of the counts and
// counted in Hidden, so a token sees no key, target, holder or token it
// may not read. ErrNotFound if the group does not exist.
func (n *Node) GroupPage(ctx context.Context, name string, p fsm.Page, c Consistency, visible func(key string) bool) (GroupView, error) {
	if err := n.readBarrier(ctx, c); err != nil {
		return GroupView{}, err
	}
	g := n.machine.Group(name) // never modified once stored
	if g == nil {
		return GroupView{}, fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	var loads views.Loads
	if lp := n.leading.Load(); lp != nil {
		loads = lp.loads // only the leader receives the reports
	}
	return views.GroupPage(n.machine, g, p, visible, liveWorkers(n.workerMembers()), loads), nil
}

// HeldBy is the worker a held lease belongs to: the worker its metadata
// names (workers name themselves there), or its holder.
func HeldBy(l *fsm.Lease) string { return views.HeldBy(l) }

// AssignmentView is one page of a group's plan (Node.AssignmentPage).
type AssignmentView struct {
	// Plan maps key to target worker id; Prepare, for the keys of the
	// page being prepared by another worker, that worker.
	Plan, Prepare map[string]string
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
	plan, next, hidden := views.AssignmentPage(g, worker, p.After, max(p.Limit, 1), visible)
	prepare := views.PreparePage(g, worker, p.After, next, visible)
	return AssignmentView{Plan: plan, Prepare: prepare, Next: next, Hidden: hidden, Index: g.ModifyIndex}, nil
}
