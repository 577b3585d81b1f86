package cluster

import (
	"context"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
)

// ACL default policies: what a request without a token may do while ACLs
// are enabled.
const (
	// ACLDeny: nothing. The default.
	ACLDeny = acl.Deny
	// ACLAllow: every right except acl, with no holder binding. A
	// migration mode, not a security boundary: any client can leave its
	// token out.
	ACLAllow = acl.Allow
)

var (
	// ErrPermissionDenied: the request's token lacks a right, or there is
	// no token and the default policy is deny. Returned wrapped in a
	// *PermissionError that names the right and the name it lacked.
	ErrPermissionDenied = acl.ErrPermissionDenied

	// ErrACLNotFound: no token has the secret the request carried (it
	// never existed, or it was deleted).
	ErrACLNotFound = acl.ErrTokenNotFound

	// ErrACLBootstrapped: the ACL system was bootstrapped already; the
	// first management token is handed out only once.
	ErrACLBootstrapped = acl.ErrBootstrapped

	// ErrACLDisabled: ACLs are not enabled on this server.
	ErrACLDisabled = acl.ErrDisabled
)

// PermissionError says which right a request lacked, and on what.
type PermissionError = acl.PermissionError

// Authorizer answers what one request may do: the rights of its token (or
// of no token) on the replicated state of the node that resolved it. Build
// it with Node.ResolveToken. Its methods are safe for concurrent use.
type Authorizer = acl.Authorizer

// AllowAll returns the Authorizer of every request while ACLs are off: it
// allows everything.
func AllowAll() *Authorizer { return acl.AllowAll() }

// ACL is the ACL calls of a node (acl.Calls): tokens and policies, read
// from the node's replicated state and written through its leader's
// proposer.
type ACL = acl.Calls[Consistency]

// ACL returns the ACL calls of n.
func (n *Node) ACL() ACL {
	return acl.NewCalls(acl.Node[Consistency]{On: n.cfg.ACLEnabled, State: n.machine, Write: n.write, ReadBarrier: n.readBarrier, Log: n.log})
}

// ResolveToken returns the Authorizer of a request that carried secret
// ("" for none), checked against this node's own replicated state: a
// token deleted on the leader stops working here once this node has
// applied the deletion. With ACLs off every request may do everything.
// ErrACLNotFound when no token has the secret.
func (n *Node) ResolveToken(secret string) (*Authorizer, error) {
	if !n.cfg.ACLEnabled {
		return acl.AllowAll(), nil
	}
	return acl.Resolve(n.machine, n.cfg.ACLDefaultPolicy, secret)
}

// TokenSpec is what a new token gets.
type TokenSpec = acl.TokenSpec

// NewToken is a token as its creator sees it, once: with its secret.
type NewToken = acl.TokenWithSecret

// PolicySpec defines a policy.
type PolicySpec = acl.PolicySpec

// WorkerAllowed says whether a worker whose requests carry a's token may
// serve group: its holders (the id and a '#' suffix) must fit the token's
// holder binding, it must be able to read the group (to watch its plan),
// and to read and acquire every key the group has now (the plan leaves
// out the keys a token may not read).
func (n *Node) WorkerAllowed(a *Authorizer, worker, group string) error {
	return acl.WorkerAllowed(n.machine, a, worker, group)
}

// Prepared records, through Raft, a worker's word that it prepared keys of
// group that the plan named it to prepare: each that is still being
// prepared for it is targeted at it (fsm.Prepared). With ACLs on, a's
// token must be one the worker may serve the group with
// (WorkerAllowed): a token bound to one worker's holders cannot speak
// for another. It answers the keys now targeted at worker among keys.
func (n *Node) Prepared(ctx context.Context, a *Authorizer, group, worker string, keys []string) ([]string, error) {
	if err := check.Name("worker", worker); err != nil {
		return nil, err
	}
	if err := check.Name("name", group); err != nil {
		return nil, err
	}
	if len(keys) == 0 || len(keys) > wire.MaxPrepareKeys {
		return nil, invalid("keys", "give 1 to %d keys, got %d", wire.MaxPrepareKeys, len(keys))
	}
	for _, k := range keys {
		if err := fsm.ValidateKey(k); err != nil {
			return nil, &InvalidError{Field: "keys", Err: err}
		}
	}
	if n.cfg.ACLEnabled {
		if err := n.WorkerAllowed(a, worker, group); err != nil {
			return nil, err
		}
	}
	g, err := n.writeGroup(ctx, group, fsm.Prepared{Group: group, Worker: worker, Keys: keys})
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, k := range keys {
		if g.Assignment[k] == worker {
			out = append(out, k)
		}
	}
	return out, nil
}

// RegisterWorker records, through Raft, that the token of a vouches for
// worker serving groups. With ACLs on, the balancer plans keys of a group
// only to live workers registered for it whose token still passes
// WorkerAllowed (or, under the allow default policy, to unregistered
// workers too). A new registration of the same worker replaces the last.
func (n *Node) RegisterWorker(ctx context.Context, a *Authorizer, worker string, groups []string) error {
	if !n.cfg.ACLEnabled {
		return ErrACLDisabled
	}
	if err := check.Name("worker", worker); err != nil {
		return err
	}
	if len(groups) == 0 || len(groups) > acl.MaxRegisterGroups {
		return invalid("groups", "give 1 to %d groups, got %d", acl.MaxRegisterGroups, len(groups))
	}
	for _, g := range groups {
		if err := check.Name("name", g); err != nil {
			return &InvalidError{Field: "groups", Err: err}
		}
		if err := n.WorkerAllowed(a, worker, g); err != nil {
			return err
		}
	}
	if a.AccessorID() == "" {
		// An anonymous worker under the allow policy is admitted without
		// registering; there is no token to record.
		return nil
	}
	_, err := n.write(ctx, fsm.WorkerRegister{Worker: worker, Groups: groups, Accessor: a.AccessorID()})
	return err
}
