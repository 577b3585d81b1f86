package acl

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
)

var (
	// ErrBootstrapped: the ACL system was bootstrapped already; the
	// first management token is handed out only once.
	ErrBootstrapped = errors.New("acl system already bootstrapped")

	// ErrDisabled: ACLs are not enabled on this server.
	ErrDisabled = errors.New("acls are not enabled on this server")
)

// Node is what the ACL calls need of a node: whether it enforces ACLs,
// its replicated state, its leader's proposer, and the read barrier of a
// read of consistency C.
type Node[C any] struct {
	On          bool
	State       *fsm.Machine
	Write       func(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
	ReadBarrier func(ctx context.Context, c C) error
	Log         hclog.Logger
}

// Calls is the ACL calls of a node: tokens and policies, read from the
// node's replicated state and written through its leader's proposer.
type Calls[C any] struct{ n Node[C] }

// NewCalls returns the ACL calls of n.
func NewCalls[C any](n Node[C]) Calls[C] { return Calls[C]{n: n} }

// TokenWithSecret is a token as its creator sees it, once: with its secret.
type TokenWithSecret struct {
	*fsm.ACLToken
	SecretID string
}

// Bootstrap creates the first management token and returns it with its
// secret. ErrBootstrapped once it has been done.
func (a Calls[C]) Bootstrap(ctx context.Context) (TokenWithSecret, error) {
	if !a.n.On {
		return TokenWithSecret{}, ErrDisabled
	}
	tok, secret, err := NewToken(TokenSpec{Description: "bootstrap token (management)", Management: true})
	if err != nil {
		return TokenWithSecret{}, err
	}
	r, err := a.n.Write(ctx, fsm.ACLBootstrap{Token: tok})
	if err != nil {
		return TokenWithSecret{}, err
	}
	if r.Code == fsm.Refused {
		return TokenWithSecret{}, ErrBootstrapped
	}
	a.n.Log.Info("acl_bootstrapped", "accessor", tok.AccessorID)
	return TokenWithSecret{ACLToken: a.n.State.ACLToken(tok.AccessorID), SecretID: secret}, nil
}

// CreateToken creates a token and returns it with its secret, which the
// cluster does not keep. Every policy it names must exist.
func (a Calls[C]) CreateToken(ctx context.Context, spec TokenSpec) (TokenWithSecret, error) {
	if !a.n.On {
		return TokenWithSecret{}, ErrDisabled
	}
	if len(spec.Description) > MaxDescriptionLen {
		return TokenWithSecret{}, check.Invalid("description", "%d bytes, the limit is %d", len(spec.Description), MaxDescriptionLen)
	}
	if len(spec.Policies) > MaxTokenPolicies {
		return TokenWithSecret{}, check.Invalid("policies", "%d policies, the limit is %d", len(spec.Policies), MaxTokenPolicies)
	}
	if len(spec.Policies) == 0 && !spec.Management {
		return TokenWithSecret{}, check.Invalid("policies", "a token needs at least one policy, or management")
	}
	for _, p := range spec.Policies {
		if a.n.State.ACLPolicy(p) == nil {
			return TokenWithSecret{}, check.Invalid("policies", "no policy %q", p)
		}
	}
	if len(spec.HolderPrefix) > check.MaxHolderLen {
		return TokenWithSecret{}, check.Invalid("holder_prefix", "%d bytes, the limit is %d", len(spec.HolderPrefix), check.MaxHolderLen)
	}
	tok, secret, err := NewToken(spec)
	if err != nil {
		return TokenWithSecret{}, err
	}
	r, err := a.n.Write(ctx, fsm.ACLTokenSet{Token: tok})
	if err != nil {
		return TokenWithSecret{}, err
	}
	if r.Code == fsm.Refused { // two random 122-bit secrets collided
		return TokenWithSecret{}, fmt.Errorf("token secret collided with another token's; try again")
	}
	return TokenWithSecret{ACLToken: a.n.State.ACLToken(tok.AccessorID), SecretID: secret}, nil
}

// DeleteToken deletes a token; it stops working on each node as soon
// as that node applies the deletion. ErrNotFound if there is no such token.
func (a Calls[C]) DeleteToken(ctx context.Context, accessor string) error {
	if !a.n.On {
		return ErrDisabled
	}
	r, err := a.n.Write(ctx, fsm.ACLTokenDelete{AccessorID: accessor})
	if err == nil && r.Code == fsm.NotFound {
		return fmt.Errorf("token %q: %w", accessor, check.ErrNotFound)
	}
	return err
}

// read starts every read: ErrDisabled, or the read barrier of c.
func (a Calls[C]) read(ctx context.Context, c C) error {
	if !a.n.On {
		return ErrDisabled
	}
	return a.n.ReadBarrier(ctx, c)
}

// Tokens lists every token (never a secret) and the ACL index.
func (a Calls[C]) Tokens(ctx context.Context, c C) ([]*fsm.ACLToken, uint64, error) {
	if err := a.read(ctx, c); err != nil {
		return nil, 0, err
	}
	tokens, index := a.n.State.ACLTokens()
	return tokens, index, nil
}

// TokensPage lists one page of the tokens (never a secret) by accessor id
// after after (fsm.Machine.ACLTokensPage): at most limit, the id the next
// page starts after ("" after the last page), and the ACL index.
func (a Calls[C]) TokensPage(ctx context.Context, after string, limit int, c C) ([]*fsm.ACLToken, string, uint64, error) {
	if err := a.read(ctx, c); err != nil {
		return nil, "", 0, err
	}
	tokens, next, index := a.n.State.ACLTokensPage(after, limit)
	return tokens, next, index, nil
}

// Token reads one token by accessor id. ErrNotFound if there is none.
func (a Calls[C]) Token(ctx context.Context, accessor string, c C) (*fsm.ACLToken, error) {
	if err := a.read(ctx, c); err != nil {
		return nil, err
	}
	tok := a.n.State.ACLToken(accessor)
	if tok == nil {
		return nil, fmt.Errorf("token %q: %w", accessor, check.ErrNotFound)
	}
	return tok, nil
}

// SetPolicy creates or replaces a policy; tokens that name it have its
// new rules as soon as each node applies it.
func (a Calls[C]) SetPolicy(ctx context.Context, spec PolicySpec) (*fsm.ACLPolicy, error) {
	if !a.n.On {
		return nil, ErrDisabled
	}
	if err := CheckPolicy(spec); err != nil {
		return nil, err
	}
	if _, err := a.n.Write(ctx, fsm.ACLPolicySet{Policy: fsm.ACLPolicy{Name: spec.Name, Description: spec.Description, Rules: spec.Rules}}); err != nil {
		return nil, err
	}
	return a.n.State.ACLPolicy(spec.Name), nil
}

// DeletePolicy deletes a policy; tokens that name it lose its rules.
func (a Calls[C]) DeletePolicy(ctx context.Context, name string) error {
	if !a.n.On {
		return ErrDisabled
	}
	r, err := a.n.Write(ctx, fsm.ACLPolicyDelete{Name: name})
	if err == nil && r.Code == fsm.NotFound {
		return fmt.Errorf("policy %q: %w", name, check.ErrNotFound)
	}
	return err
}

// Policies lists every policy and the ACL index.
func (a Calls[C]) Policies(ctx context.Context, c C) ([]*fsm.ACLPolicy, uint64, error) {
	if err := a.read(ctx, c); err != nil {
		return nil, 0, err
	}
	policies, index := a.n.State.ACLPolicies()
	return policies, index, nil
}

// Policy reads one policy. ErrNotFound if there is none.
func (a Calls[C]) Policy(ctx context.Context, name string, c C) (*fsm.ACLPolicy, error) {
	if err := a.read(ctx, c); err != nil {
		return nil, err
	}
	p := a.n.State.ACLPolicy(name)
	if p == nil {
		return nil, fmt.Errorf("policy %q: %w", name, check.ErrNotFound)
	}
	return p, nil
}
