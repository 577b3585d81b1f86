package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/acl"
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

// Limits of ACL objects.
const (
	MaxPolicyNameLen  = acl.MaxPolicyNameLen
	MaxDescriptionLen = acl.MaxDescriptionLen
	MaxPolicyRules    = acl.MaxPolicyRules
	MaxTokenPolicies  = acl.MaxTokenPolicies
	MaxRegisterGroups = acl.MaxRegisterGroups
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
	ErrACLBootstrapped = errors.New("acl system already bootstrapped")

	// ErrACLDisabled: ACLs are not enabled on this server.
	ErrACLDisabled = errors.New("acls are not enabled on this server")
)

// PermissionError says which right a request lacked, and on what.
type PermissionError = acl.PermissionError

// Authorizer answers what one request may do: the rights of its token (or
// of no token) on the replicated state of the node that resolved it. Build
// it with Node.ResolveToken. Its methods are safe for concurrent use.
type Authorizer = acl.Authorizer

// Right is fsm.Right, so that callers of package cluster need not import
// fsm for it.
type Right = fsm.Right

// AllowAll returns the Authorizer of every request while ACLs are off: it
// allows everything.
func AllowAll() *Authorizer { return acl.AllowAll() }

// NewAuthorizer evaluates a token's rules; for tests and the balancer.
// policies are looked up by the token's policy names; a missing one grants
// nothing.
func NewAuthorizer(tok *fsm.ACLToken, policy func(name string) *fsm.ACLPolicy) *Authorizer {
	return acl.NewAuthorizer(tok, policy)
}

// HashSecret is the hex SHA-256 of a token's secret: what the cluster
// stores and looks tokens up by.
func HashSecret(secret string) string { return acl.HashSecret(secret) }

// newUUID returns a random (version 4) UUID, made on the server, never in
// the state machine.
func newUUID() (string, error) { return acl.NewUUID() }

// ACL is the ACL calls of a node: tokens and policies, read from the
// node's replicated state and written through its leader's proposer.
type ACL struct{ n *Node }

// ACL returns the ACL calls of n.
func (n *Node) ACL() ACL { return ACL{n: n} }

// ACLEnabled reports whether this node enforces ACLs.
func (n *Node) ACLEnabled() bool { return n.cfg.ACLEnabled }

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
type NewToken struct {
	*fsm.ACLToken
	SecretID string
}

// Bootstrap creates the first management token and returns it with its
// secret. ErrACLBootstrapped once it has been done.
func (a ACL) Bootstrap(ctx context.Context) (NewToken, error) {
	if !a.n.cfg.ACLEnabled {
		return NewToken{}, ErrACLDisabled
	}
	tok, secret, err := acl.NewToken(TokenSpec{Description: "bootstrap token (management)", Management: true})
	if err != nil {
		return NewToken{}, err
	}
	r, err := a.n.write(ctx, fsm.ACLBootstrap{Token: tok})
	if err != nil {
		return NewToken{}, err
	}
	if r.Code == fsm.Refused {
		return NewToken{}, ErrACLBootstrapped
	}
	a.n.log.Info("acl_bootstrapped", "accessor", tok.AccessorID)
	return NewToken{ACLToken: a.n.machine.ACLToken(tok.AccessorID), SecretID: secret}, nil
}

// CreateToken creates a token and returns it with its secret, which the
// cluster does not keep. Every policy it names must exist.
func (a ACL) CreateToken(ctx context.Context, spec TokenSpec) (NewToken, error) {
	if !a.n.cfg.ACLEnabled {
		return NewToken{}, ErrACLDisabled
	}
	if len(spec.Description) > MaxDescriptionLen {
		return NewToken{}, invalid("description", "%d bytes, the limit is %d", len(spec.Description), MaxDescriptionLen)
	}
	if len(spec.Policies) > MaxTokenPolicies {
		return NewToken{}, invalid("policies", "%d policies, the limit is %d", len(spec.Policies), MaxTokenPolicies)
	}
	if len(spec.Policies) == 0 && !spec.Management {
		return NewToken{}, invalid("policies", "a token needs at least one policy, or management")
	}
	for _, p := range spec.Policies {
		if a.n.machine.ACLPolicy(p) == nil {
			return NewToken{}, invalid("policies", "no policy %q", p)
		}
	}
	if len(spec.HolderPrefix) > MaxHolderLen {
		return NewToken{}, invalid("holder_prefix", "%d bytes, the limit is %d", len(spec.HolderPrefix), MaxHolderLen)
	}
	tok, secret, err := acl.NewToken(spec)
	if err != nil {
		return NewToken{}, err
	}
	r, err := a.n.write(ctx, fsm.ACLTokenSet{Token: tok})
	if err != nil {
		return NewToken{}, err
	}
	if r.Code == fsm.Refused { // two random 122-bit secrets collided
		return NewToken{}, fmt.Errorf("token secret collided with another token's; try again")
	}
	return NewToken{ACLToken: a.n.machine.ACLToken(tok.AccessorID), SecretID: secret}, nil
}

// DeleteToken deletes a token; it stops working on each node as soon
// as that node applies the deletion. ErrNotFound if there is no such token.
func (a ACL) DeleteToken(ctx context.Context, accessor string) error {
	if !a.n.cfg.ACLEnabled {
		return ErrACLDisabled
	}
	r, err := a.n.write(ctx, fsm.ACLTokenDelete{AccessorID: accessor})
	if err == nil && r.Code == fsm.NotFound {
		return fmt.Errorf("token %q: %w", accessor, ErrNotFound)
	}
	return err
}

// Tokens lists every token (never a secret) and the ACL index.
func (a ACL) Tokens(ctx context.Context, c Consistency) ([]*fsm.ACLToken, uint64, error) {
	if !a.n.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if err := a.n.readBarrier(ctx, c); err != nil {
		return nil, 0, err
	}
	tokens, index := a.n.machine.ACLTokens()
	return tokens, index, nil
}

// Token reads one token by accessor id. ErrNotFound if there is none.
func (a ACL) Token(ctx context.Context, accessor string, c Consistency) (*fsm.ACLToken, error) {
	if !a.n.cfg.ACLEnabled {
		return nil, ErrACLDisabled
	}
	if err := a.n.readBarrier(ctx, c); err != nil {
		return nil, err
	}
	tok := a.n.machine.ACLToken(accessor)
	if tok == nil {
		return nil, fmt.Errorf("token %q: %w", accessor, ErrNotFound)
	}
	return tok, nil
}

// PolicySpec defines a policy.
type PolicySpec = acl.PolicySpec

// ValidatePolicy checks a policy's name and rules; an *InvalidError
// names the first field that is invalid.
func ValidatePolicy(spec PolicySpec) error {
	if err := acl.ValidatePolicy(spec); err != nil {
		var fe *acl.FieldError
		if errors.As(err, &fe) {
			return &InvalidError{Field: fe.Field, Err: fe.Err}
		}
		return err
	}
	return nil
}

// SetPolicy creates or replaces a policy; tokens that name it have its
// new rules as soon as each node applies it.
func (a ACL) SetPolicy(ctx context.Context, spec PolicySpec) (*fsm.ACLPolicy, error) {
	if !a.n.cfg.ACLEnabled {
		return nil, ErrACLDisabled
	}
	if err := ValidatePolicy(spec); err != nil {
		return nil, err
	}
	if _, err := a.n.write(ctx, fsm.ACLPolicySet{Policy: fsm.ACLPolicy{Name: spec.Name, Description: spec.Description, Rules: spec.Rules}}); err != nil {
		return nil, err
	}
	return a.n.machine.ACLPolicy(spec.Name), nil
}

// DeletePolicy deletes a policy; tokens that name it lose its rules.
func (a ACL) DeletePolicy(ctx context.Context, name string) error {
	if !a.n.cfg.ACLEnabled {
		return ErrACLDisabled
	}
	r, err := a.n.write(ctx, fsm.ACLPolicyDelete{Name: name})
	if err == nil && r.Code == fsm.NotFound {
		return fmt.Errorf("policy %q: %w", name, ErrNotFound)
	}
	return err
}

// Policies lists every policy and the ACL index.
func (a ACL) Policies(ctx context.Context, c Consistency) ([]*fsm.ACLPolicy, uint64, error) {
	if !a.n.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if err := a.n.readBarrier(ctx, c); err != nil {
		return nil, 0, err
	}
	policies, index := a.n.machine.ACLPolicies()
	return policies, index, nil
}

// Policy reads one policy. ErrNotFound if there is none.
func (a ACL) Policy(ctx context.Context, name string, c Consistency) (*fsm.ACLPolicy, error) {
	if !a.n.cfg.ACLEnabled {
		return nil, ErrACLDisabled
	}
	if err := a.n.readBarrier(ctx, c); err != nil {
		return nil, err
	}
	p := a.n.machine.ACLPolicy(name)
	if p == nil {
		return nil, fmt.Errorf("policy %q: %w", name, ErrNotFound)
	}
	return p, nil
}

// WorkerAllowed says whether a worker whose requests carry a's token may
// serve group: its holders (the id and a '#' suffix) must fit the token's
// holder binding, it must be able to read the group (to watch its plan),
// and to read and acquire every key the group has now (the plan leaves
// out the keys a token may not read).
func (n *Node) WorkerAllowed(a *Authorizer, worker, group string) error {
	return acl.WorkerAllowed(n.machine, a, worker, group)
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
	if err := validateName("worker", worker); err != nil {
		return err
	}
	if len(groups) == 0 || len(groups) > MaxRegisterGroups {
		return invalid("groups", "give 1 to %d groups, got %d", MaxRegisterGroups, len(groups))
	}
	for _, g := range groups {
		if err := validateGroupName(g); err != nil {
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

// admitWorker is the balancer's admission check with ACLs on (see
// acl.Admit).
func (n *Node) admitWorker(worker, group string) bool {
	return acl.Admit(n.machine, n.cfg.ACLDefaultPolicy, worker, group)
}
