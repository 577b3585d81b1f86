package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenure-io/tenure/fsm"
)

// ACL default policies: what a request without a token may do while ACLs
// are enabled.
const (
	// ACLDeny: nothing. The default.
	ACLDeny = "deny"
	// ACLAllow: every right except acl, with no holder binding. A
	// migration mode, not a security boundary: any client can leave its
	// token out.
	ACLAllow = "allow"
)

// Limits of ACL objects.
const (
	MaxPolicyNameLen  = 128
	MaxDescriptionLen = 256
	MaxPolicyRules    = 256
	MaxTokenPolicies  = 64
	MaxRegisterGroups = 64
)

var (
	// ErrPermissionDenied: the request's token lacks a right, or there is
	// no token and the default policy is deny. Returned wrapped in a
	// *PermissionError that names the right and the name it lacked.
	ErrPermissionDenied = errors.New("permission denied")

	// ErrACLNotFound: no token has the secret the request carried (it
	// never existed, or it was deleted).
	ErrACLNotFound = errors.New("acl token not found")

	// ErrACLBootstrapped: the ACL system was bootstrapped already; the
	// first management token is handed out only once.
	ErrACLBootstrapped = errors.New("acl system already bootstrapped")

	// ErrACLDisabled: ACLs are not enabled on this server.
	ErrACLDisabled = errors.New("acls are not enabled on this server")
)

// PermissionError says which right a request lacked, and on what.
type PermissionError struct {
	// Accessor is the accessor id of the token, or "" when there was none.
	Accessor string
	// Right is the right that was missing; zero for a holder refusal.
	Right fsm.Right
	// Kind says what Name is: "key", "prefix", "group", "worker",
	// "cluster" or "holder".
	Kind string
	Name string
	// HolderPrefix is the token's binding, for a holder refusal.
	HolderPrefix string
}

func (e *PermissionError) Error() string {
	who := "token " + e.Accessor
	if e.Accessor == "" {
		who = "no token (anonymous requests are denied)"
	}
	switch e.Kind {
	case "holder":
		return fmt.Sprintf("permission denied: %s is bound to holders starting with %q, not %q", who, e.HolderPrefix, e.Name)
	case "cluster":
		return fmt.Sprintf("permission denied: %s lacks %q (a cluster right, granted by a rule with an empty prefix)", who, e.Right)
	case "token":
		return fmt.Sprintf("permission denied: %s: this route needs a token", who)
	}
	return fmt.Sprintf("permission denied: %s lacks %q on %s %q", who, e.Right, e.Kind, e.Name)
}

// Unwrap makes errors.Is(err, ErrPermissionDenied) true.
func (e *PermissionError) Unwrap() error { return ErrPermissionDenied }

// Authorizer answers what one request may do: the rights of its token (or
// of no token) on the replicated state of the node that resolved it. Build
// it with Node.ResolveToken. Its methods are safe for concurrent use.
type Authorizer struct {
	enabled      bool
	accessor     string
	management   bool
	holderPrefix string
	// anonymous requests get the default policy's rights on every name.
	anonymous Right
	isAnon    bool
	rules     []fsm.ACLRule
}

// Right is fsm.Right, so that callers of package cluster need not import
// fsm for it.
type Right = fsm.Right

// allowAll is the Authorizer of every request while ACLs are off.
var allowAll = &Authorizer{}

// AllowAll returns the Authorizer of every request while ACLs are off: it
// allows everything.
func AllowAll() *Authorizer { return allowAll }

// NewAuthorizer evaluates a token's rules; for tests and the balancer.
// policies are looked up by the token's policy names; a missing one grants
// nothing.
func NewAuthorizer(tok *fsm.ACLToken, policy func(name string) *fsm.ACLPolicy) *Authorizer {
	a := &Authorizer{enabled: true, accessor: tok.AccessorID, management: tok.Management, holderPrefix: tok.HolderPrefix}
	for _, name := range tok.Policies {
		if p := policy(name); p != nil {
			a.rules = append(a.rules, p.Rules...)
		}
	}
	return a
}

// anonymousAuthorizer is the Authorizer of a request without a token.
func anonymousAuthorizer(defaultPolicy string) *Authorizer {
	a := &Authorizer{enabled: true, isAnon: true}
	if defaultPolicy == ACLAllow {
		a.anonymous = fsm.RightAll &^ fsm.RightACL
	}
	return a
}

// Enabled reports whether ACLs are enforced for this request.
func (a *Authorizer) Enabled() bool { return a.enabled }

// AccessorID is the token's accessor id; "" without a token or ACLs.
func (a *Authorizer) AccessorID() string { return a.accessor }

// Actor is who the request acts as, for the events of the operator
// commands it makes (WithActor): the token's accessor id, "anonymous"
// for a request without a token, "" while ACLs are off.
func (a *Authorizer) Actor() string {
	switch {
	case !a.enabled:
		return ""
	case a.isAnon:
		return "anonymous"
	}
	return a.accessor
}

// HolderPrefix is the token's holder binding; "" when unbound.
func (a *Authorizer) HolderPrefix() string { return a.holderPrefix }

// Rights is the set of rights the request has on name. A rule grants its
// rights on every name that starts with its prefix; the rights of all
// matching rules of all the token's policies add up. Cluster rights
// (operator, acl) come only from rules with an empty prefix.
func (a *Authorizer) Rights(name string) Right {
	switch {
	case !a.enabled, a.management:
		return fsm.RightAll
	case a.isAnon:
		return a.anonymous
	}
	var r Right
	for _, rule := range a.rules {
		if !strings.HasPrefix(name, rule.Prefix) {
			continue
		}
		rights := rule.Rights
		if rule.Prefix != "" {
			rights &^= fsm.ClusterRights // ValidatePolicy refuses them; never honour them
		}
		r |= rights
	}
	return r.Implied()
}

// Allow returns nil if the request has right on the name of the given
// kind ("key", "prefix" for lists, "group", "worker"), and a
// *PermissionError otherwise. A prefix is allowed when a rule's prefix is a
// prefix of it: read on "scenes/" allows listing "scenes/1" but not "sc".
func (a *Authorizer) Allow(right Right, kind, name string) error {
	if right&fsm.ClusterRights != 0 {
		kind, name = "cluster", ""
	}
	if a.Rights(name)&right == right {
		return nil
	}
	return &PermissionError{Accessor: a.accessor, Right: right, Kind: kind, Name: name}
}

// AllowCluster is Allow for the cluster rights (operator, acl).
func (a *Authorizer) AllowCluster(right Right) error { return a.Allow(right, "cluster", "") }

// AllowAny returns nil unless the request has no token and anonymous
// requests are denied: for routes that need a token but no right.
func (a *Authorizer) AllowAny() error {
	if a.enabled && a.isAnon && a.anonymous == 0 {
		return &PermissionError{Kind: "token"}
	}
	return nil
}

// AllowHolder returns nil unless the token is bound to a holder prefix
// that holder does not start with.
func (a *Authorizer) AllowHolder(holder string) error {
	if !a.enabled || a.holderPrefix == "" || strings.HasPrefix(holder, a.holderPrefix) {
		return nil
	}
	return &PermissionError{Accessor: a.accessor, Kind: "holder", Name: holder, HolderPrefix: a.holderPrefix}
}

// HashSecret is the hex SHA-256 of a token's secret: what the cluster
// stores and looks tokens up by.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// newUUID returns a random (version 4) UUID. Accessor ids and secrets are
// made here, on the server, never in the state machine.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

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
		return allowAll, nil
	}
	if secret == "" {
		return anonymousAuthorizer(n.cfg.ACLDefaultPolicy), nil
	}
	tok := n.machine.ACLTokenByHash(HashSecret(secret))
	if tok == nil {
		return nil, ErrACLNotFound
	}
	return NewAuthorizer(tok, n.machine.ACLPolicy), nil
}

// authorizerOf is the Authorizer of the token with accessor id, or nil.
func (n *Node) authorizerOf(accessor string) *Authorizer {
	tok := n.machine.ACLToken(accessor)
	if tok == nil {
		return nil
	}
	return NewAuthorizer(tok, n.machine.ACLPolicy)
}

// TokenSpec is what a new token gets.
type TokenSpec struct {
	Description  string
	Policies     []string
	HolderPrefix string
	Management   bool
}

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
	tok, secret, err := newToken(TokenSpec{Description: "bootstrap token (management)", Management: true})
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

func newToken(spec TokenSpec) (fsm.ACLToken, string, error) {
	accessor, err := newUUID()
	if err != nil {
		return fsm.ACLToken{}, "", err
	}
	secret, err := newUUID()
	if err != nil {
		return fsm.ACLToken{}, "", err
	}
	return fsm.ACLToken{AccessorID: accessor, SecretHash: HashSecret(secret), Description: spec.Description,
		Policies: spec.Policies, Management: spec.Management, HolderPrefix: spec.HolderPrefix,
		CreateTime: time.Now().UnixNano()}, secret, nil
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
	tok, secret, err := newToken(spec)
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
type PolicySpec struct {
	Name        string
	Description string
	Rules       []fsm.ACLRule
}

// ValidatePolicy checks a policy's name and rules.
func ValidatePolicy(spec PolicySpec) error {
	if spec.Name == "" || len(spec.Name) > MaxPolicyNameLen {
		return invalid("name", "must be 1 to %d bytes", MaxPolicyNameLen)
	}
	for i := 0; i < len(spec.Name); i++ {
		c := spec.Name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return invalid("name", "byte %d (%q) is not one of [A-Za-z0-9._-]", i, c)
		}
	}
	if len(spec.Description) > MaxDescriptionLen {
		return invalid("description", "%d bytes, the limit is %d", len(spec.Description), MaxDescriptionLen)
	}
	if len(spec.Rules) > MaxPolicyRules {
		return invalid("rules", "%d rules, the limit is %d", len(spec.Rules), MaxPolicyRules)
	}
	for i, r := range spec.Rules {
		switch {
		case r.Rights == 0:
			return invalid("rules", "rule %d (prefix %q) grants no right", i, r.Prefix)
		case r.Rights&^fsm.RightAll != 0:
			return invalid("rules", "rule %d has unknown rights %#x", i, uint8(r.Rights))
		case len(r.Prefix) > fsm.MaxKeyLen:
			return invalid("rules", "rule %d: prefix is %d bytes, the limit is %d", i, len(r.Prefix), fsm.MaxKeyLen)
		case r.Prefix != "" && r.Rights&fsm.ClusterRights != 0:
			return invalid("rules", "rule %d: %s are cluster rights: give them in a rule with an empty prefix, not %q",
				i, r.Rights&fsm.ClusterRights, r.Prefix)
		}
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
	if err := a.AllowHolder(worker + "#"); err != nil {
		return err
	}
	if err := a.Allow(fsm.RightRead, "group", group); err != nil {
		return err
	}
	if g := n.machine.Group(group); g != nil {
		for _, k := range g.Keys {
			if err := a.Allow(fsm.RightRead|fsm.RightWrite, "key", k); err != nil {
				return err
			}
		}
	}
	return nil
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

// admitWorker is the balancer's admission check with ACLs on: worker may
// get keys of group if it is registered for the group by a token that
// still allows it, or, unregistered, if anonymous requests would be
// allowed to.
func (n *Node) admitWorker(worker, group string) bool {
	reg := n.machine.WorkerRegistration(worker)
	var a *Authorizer
	switch {
	case reg == nil:
		a = anonymousAuthorizer(n.cfg.ACLDefaultPolicy)
	case !contains(reg.Groups, group):
		return false
	default:
		if a = n.authorizerOf(reg.Accessor); a == nil {
			return false // its token was deleted
		}
	}
	return n.WorkerAllowed(a, worker, group) == nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
