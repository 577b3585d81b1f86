package cluster

import (
	"context"

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
