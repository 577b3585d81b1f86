package cluster

import (
	"context"
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
)

// Revoke ends the lease of key whoever holds it, and answers the lease it
// ended (none when the key is free). ErrNotFound if the key was never seen.
//
// Without force the lease ends safely: its holder's renewals are refused
// from the moment the command applies, and the key frees (and goes to the
// first waiter) when the holder's current deadline on the leader passes,
// the earliest moment the holder is sure to have stopped; EndedLease.FreesIn
// says when. This survives a failover: the new leader refuses the
// renewals too, and frees the key a full TTL after it took over. With
// force the key frees at once, and exclusion rests on fencing alone.
func (n *Node) Revoke(ctx context.Context, key string, force bool) ([]EndedLease, error) {
	if err := fsm.ValidateKey(key); err != nil {
		return nil, &InvalidError{Field: "key", Err: err}
	}
	r, err := n.end(ctx, fsm.End{Key: key, Force: force})
	if err == nil && r.res.Code == fsm.NotFound {
		return nil, fmt.Errorf("key %q: %w", key, ErrNotFound)
	}
	return r.ended, err
}

// RevokeHolder ends every lease that holder holds, as Revoke does for one
// key, and answers them in key order.
func (n *Node) RevokeHolder(ctx context.Context, holder string, force bool) ([]EndedLease, error) {
	if err := check.Holder(holder); err != nil {
		return nil, err
	}
	r, err := n.end(ctx, fsm.End{Holder: holder, Force: force})
	return r.ended, err
}

func (n *Node) end(ctx context.Context, cmd fsm.Command) (opResult, error) {
	p, err := n.proposer()
	if err != nil {
		return opResult{}, err
	}
	r := p.submitOp(ctx, &op{cmd: cmd})
	if r.err != nil {
		return opResult{}, r.err
	}
	if r.ended == nil {
		r.ended = []EndedLease{}
	}
	return r, nil
}
