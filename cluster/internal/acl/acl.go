package acl

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
)

// Default policies: what a request without a token may do while ACLs are
// enabled.
const (
	// Deny: nothing. The default.
	Deny = "deny"
	// Allow: every right except acl, with no holder binding. A migration
	// mode, not a security boundary: any client can leave its token out.
	Allow = "allow"
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

	// ErrTokenNotFound: no token has the secret the request carried (it
	// never existed, or it was deleted).
	ErrTokenNotFound = errors.New("acl token not found")
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
// it with Resolve. Its methods are safe for concurrent use.
type Authorizer struct {
	enabled      bool
	accessor     string
	management   bool
	holderPrefix string
	// anonymous requests get the default policy's rights on every name.
	anonymous fsm.Right
	isAnon    bool
	rules     []fsm.ACLRule
}

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

// Anonymous is the Authorizer of a request without a token under the
// default policy (Deny or Allow).
func Anonymous(defaultPolicy string) *Authorizer {
	a := &Authorizer{enabled: true, isAnon: true}
	if defaultPolicy == Allow {
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
func (a *Authorizer) Rights(name string) fsm.Right {
	switch {
	case !a.enabled, a.management:
		return fsm.RightAll
	case a.isAnon:
		return a.anonymous
	}
	var r fsm.Right
	for _, rule := range a.rules {
		if !strings.HasPrefix(name, rule.Prefix) {
			continue
		}
		rights := rule.Rights
		if rule.Prefix != "" {
			rights &^= fsm.ClusterRights // CheckPolicy refuses them; never honour them
		}
		r |= rights
	}
	return r.Implied()
}

// Allow returns nil if the request has right on the name of the given
// kind ("key", "prefix" for lists, "group", "worker"), and a
// *PermissionError otherwise. A prefix is allowed when a rule's prefix is a
// prefix of it: read on "scenes/" allows listing "scenes/1" but not "sc".
func (a *Authorizer) Allow(right fsm.Right, kind, name string) error {
	if right&fsm.ClusterRights != 0 {
		kind, name = "cluster", ""
	}
	if a.Rights(name)&right == right {
		return nil
	}
	return &PermissionError{Accessor: a.accessor, Right: right, Kind: kind, Name: name}
}

// AllowCluster is Allow for the cluster rights (operator, acl).
func (a *Authorizer) AllowCluster(right fsm.Right) error { return a.Allow(right, "cluster", "") }

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

// NewUUID returns a random (version 4) UUID. Accessor ids and secrets are
// made here, on the server, never in the state machine.
func NewUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// TokenSpec is what a new token gets.
type TokenSpec struct {
	Description  string
	Policies     []string
	HolderPrefix string
	Management   bool
}

// NewToken makes a token of spec with a new accessor id and secret, and
// returns it with the secret, which the token keeps only as its hash.
func NewToken(spec TokenSpec) (fsm.ACLToken, string, error) {
	accessor, err := NewUUID()
	if err != nil {
		return fsm.ACLToken{}, "", err
	}
	secret, err := NewUUID()
	if err != nil {
		return fsm.ACLToken{}, "", err
	}
	return fsm.ACLToken{AccessorID: accessor, SecretHash: HashSecret(secret), Description: spec.Description,
		Policies: spec.Policies, Management: spec.Management, HolderPrefix: spec.HolderPrefix,
		CreateTime: time.Now().UnixNano()}, secret, nil
}

// PolicySpec defines a policy.
type PolicySpec struct {
	Name        string
	Description string
	Rules       []fsm.ACLRule
}

// CheckPolicy checks a policy's name and rules; a *check.InvalidError
// names the first field that is invalid.
func CheckPolicy(spec PolicySpec) error {
	if spec.Name == "" || len(spec.Name) > MaxPolicyNameLen {
		return check.Invalid("name", "must be 1 to %d bytes", MaxPolicyNameLen)
	}
	for i := 0; i < len(spec.Name); i++ {
		c := spec.Name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return check.Invalid("name", "byte %d (%q) is not one of [A-Za-z0-9._-]", i, c)
		}
	}
	if len(spec.Description) > MaxDescriptionLen {
		return check.Invalid("description", "%d bytes, the limit is %d", len(spec.Description), MaxDescriptionLen)
	}
	if len(spec.Rules) > MaxPolicyRules {
		return check.Invalid("rules", "%d rules, the limit is %d", len(spec.Rules), MaxPolicyRules)
	}
	for i, r := range spec.Rules {
		switch {
		case r.Rights == 0:
			return check.Invalid("rules", "rule %d (prefix %q) grants no right", i, r.Prefix)
		case r.Rights&^fsm.RightAll != 0:
			return check.Invalid("rules", "rule %d has unknown rights %#x", i, uint8(r.Rights))
		case len(r.Prefix) > fsm.MaxKeyLen:
			return check.Invalid("rules", "rule %d: prefix is %d bytes, the limit is %d", i, len(r.Prefix), fsm.MaxKeyLen)
		case r.Prefix != "" && r.Rights&fsm.ClusterRights != 0:
			return check.Invalid("rules", "rule %d: %s are cluster rights: give them in a rule with an empty prefix, not %q",
				i, r.Rights&fsm.ClusterRights, r.Prefix)
		}
	}
	return nil
}
