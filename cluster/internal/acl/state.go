package acl

import (
	"slices"

	"github.com/tenure-io/tenure/fsm"
)

// State is the part of the replicated state (*fsm.Machine) that resolving
// tokens and admitting workers read. Its methods are safe for concurrent
// use.
type State interface {
	ACLTokenByHash(hash string) *fsm.ACLToken
	ACLToken(accessor string) *fsm.ACLToken
	ACLPolicy(name string) *fsm.ACLPolicy
	WorkerRegistration(worker string) *fsm.WorkerRegistration
	Group(name string) *fsm.Group
}

// Resolve returns the Authorizer of a request that carried secret ("" for
// none) while ACLs are on, checked against s: a token deleted on the
// leader stops working on a node once the node has applied the deletion.
// ErrTokenNotFound when no token has the secret.
func Resolve(s State, defaultPolicy, secret string) (*Authorizer, error) {
	if secret == "" {
		return Anonymous(defaultPolicy), nil
	}
	tok := s.ACLTokenByHash(HashSecret(secret))
	if tok == nil {
		return nil, ErrTokenNotFound
	}
	return NewAuthorizer(tok, s.ACLPolicy), nil
}

// authorizerOf is the Authorizer of the token with accessor id, or nil.
func authorizerOf(s State, accessor string) *Authorizer {
	tok := s.ACLToken(accessor)
	if tok == nil {
		return nil
	}
	return NewAuthorizer(tok, s.ACLPolicy)
}

// WorkerAllowed says whether a worker whose requests carry a's token may
// serve group: its holders (the id and a '#' suffix) must fit the token's
// holder binding, it must be able to read the group (to watch its plan),
// and to read and acquire every key the group has now in s (the plan
// leaves out the keys a token may not read).
func WorkerAllowed(s State, a *Authorizer, worker, group string) error {
	if err := a.AllowHolder(worker + "#"); err != nil {
		return err
	}
	if err := a.Allow(fsm.RightRead, "group", group); err != nil {
		return err
	}
	if g := s.Group(group); g != nil {
		for _, k := range g.Keys {
			if err := a.Allow(fsm.RightRead|fsm.RightWrite, "key", k); err != nil {
				return err
			}
		}
	}
	return nil
}

// Admit is the balancer's admission check with ACLs on: worker may get
// keys of group if it is registered for the group by a token that still
// allows it, or, unregistered, if anonymous requests would be allowed to
// under defaultPolicy.
func Admit(s State, defaultPolicy, worker, group string) bool {
	reg := s.WorkerRegistration(worker)
	var a *Authorizer
	switch {
	case reg == nil:
		a = Anonymous(defaultPolicy)
	case !slices.Contains(reg.Groups, group):
		return false
	default:
		if a = authorizerOf(s, reg.Accessor); a == nil {
			return false // its token was deleted
		}
	}
	return WorkerAllowed(s, a, worker, group) == nil
}
