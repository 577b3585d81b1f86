package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// ACL rights, as policies name them (see ACLRule).
const (
	RightRead     = "read"     // get, list, blocking queries; groups, controls, assignments
	RightWrite    = "write"    // acquire, renew, release
	RightRevoke   = "revoke"   // force-free a lease
	RightGroups   = "groups"   // create and change groups, key controls, drain
	RightOperator = "operator" // servers, leadership transfer, backups and restores; implies debug and metrics
	RightACL      = "acl"      // tokens and policies; restoring ACL state and unverified backups
	RightMetrics  = "metrics"  // GET /metrics only
	RightDebug    = "debug"    // the debug routes of tenure debug; implies metrics
)

// ACLToken is a token as the API shows it. SecretID is set only in the
// answer that created it (bootstrap, CreateToken): the cluster keeps only
// its hash, and lists never show it.
type ACLToken struct {
	AccessorID   string    `json:"accessor_id"`
	SecretID     string    `json:"secret_id,omitempty"`
	Description  string    `json:"description,omitempty"`
	Policies     []string  `json:"policies"`
	HolderPrefix string    `json:"holder_prefix,omitempty"`
	Management   bool      `json:"management,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	CreateIndex  uint64    `json:"create_index"`
}

// ACLTokenSpec is the body of PUT /v1/acl/token: what a new token gets.
// HolderPrefix binds it: it may acquire, renew and release only as
// holders that start with the prefix.
type ACLTokenSpec struct {
	Description  string   `json:"description,omitempty"`
	Policies     []string `json:"policies,omitempty"`
	HolderPrefix string   `json:"holder_prefix,omitempty"`
	Management   bool     `json:"management,omitempty"`
}

// ACLTokenList is one page of the answer of GET /v1/acl/tokens, by
// accessor id. Next is the cursor of the next page, empty after the last
// one (as wire.LeaseList).
type ACLTokenList struct {
	Tokens []ACLToken `json:"tokens"`
	Index  uint64     `json:"index"`
	Next   string     `json:"next"`
}

// ACLRule grants Rights (RightRead, …) on every name that starts with
// Prefix: lease keys and list prefixes for read, write and revoke; group
// names for read on groups and for groups; keys for controls; worker ids
// for drain. operator and acl are cluster rights: only a rule with an
// empty Prefix may grant them.
type ACLRule struct {
	Prefix string   `json:"prefix"`
	Rights []string `json:"rights"`
}

// ACLPolicy is a named list of rules.
type ACLPolicy struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Rules       []ACLRule `json:"rules"`
	CreateIndex uint64    `json:"create_index"`
	ModifyIndex uint64    `json:"modify_index"`
}

// ACLPolicySpec is the body of PUT /v1/acl/policy/{name}.
type ACLPolicySpec struct {
	Description string    `json:"description,omitempty"`
	Rules       []ACLRule `json:"rules"`
}

// ACLPolicyList is the answer of GET /v1/acl/policies.
type ACLPolicyList struct {
	Policies []ACLPolicy `json:"policies"`
	Index    uint64      `json:"index"`
}

// CheckKey asks for right on a lease key.
func CheckKey(right, key string) ACLCheck { return ACLCheck{Right: right, Key: &key} }

// CheckPrefix asks for right on a prefix, as lists check it ("" is every
// name).
func CheckPrefix(right, prefix string) ACLCheck { return ACLCheck{Right: right, Prefix: &prefix} }

// CheckGroup asks for right on a group name.
func CheckGroup(right, group string) ACLCheck { return ACLCheck{Right: right, Group: &group} }

// CheckWorker asks for right on a worker id.
func CheckWorker(right, id string) ACLCheck { return ACLCheck{Right: right, Worker: &id} }

// CheckCluster asks for a cluster right (RightOperator, RightACL,
// RightMetrics, RightDebug).
func CheckCluster(right string) ACLCheck { return ACLCheck{Right: right} }

// WorkerRegistration is the body of POST /v1/workers/{id}/register.
type WorkerRegistration struct {
	Groups []string `json:"groups"`
}

// ACLAPI makes the ACL calls of the HTTP API: bootstrap, tokens, policies,
// and the token's own rights. Get it from Client.ACL. Every call but
// Bootstrap, Self and Authorize needs a token with the acl right
// (Config.Token).
//
// Creating a token or bootstrapping is not idempotent: a retry after an
// unknown outcome could create a second token (or find the cluster
// bootstrapped by the first attempt), so these are retried only when the
// server surely did not act.
type ACLAPI struct {
	c *Client
}

// ACL returns the ACL calls of c.
func (c *Client) ACL() *ACLAPI { return &ACLAPI{c: c} }

// Bootstrap creates the first management token of a cluster with ACLs
// enabled and returns it with its secret, which is shown only this once.
// ErrACLBootstrapped once it has been done.
func (a *ACLAPI) Bootstrap(ctx context.Context) (*ACLToken, error) {
	return a.token(ctx, &request{method: http.MethodPost, path: "/v1/acl/bootstrap", unsafeRetry: true})
}

// CreateToken creates a token and returns it with its secret, which is
// shown only this once.
func (a *ACLAPI) CreateToken(ctx context.Context, spec ACLTokenSpec) (*ACLToken, error) {
	return a.token(ctx, &request{method: http.MethodPut, path: "/v1/acl/token", body: spec, unsafeRetry: true})
}

// ReadToken reads a token (without its secret) by accessor id.
func (a *ACLAPI) ReadToken(ctx context.Context, accessor string) (*ACLToken, error) {
	if accessor == "" {
		return nil, fmt.Errorf("%w: empty accessor id", ErrInvalid)
	}
	return a.token(ctx, &request{method: http.MethodGet, path: "/v1/acl/token/" + url.PathEscape(accessor)})
}

// Self reads the token this client sends (without its secret).
func (a *ACLAPI) Self(ctx context.Context) (*ACLToken, error) {
	return a.token(ctx, &request{method: http.MethodGet, path: "/v1/acl/token/self"})
}

// Authorize answers, for each check in order, whether this client's token
// may do what it asks, as the routes that need it would decide it: the
// cluster's answer to "which actions may I offer?", for any token, about
// itself only. With ACLs off every check is allowed. The server that
// answers decides from its own replicated copy of the ACL state, which may
// lag the leader's by a commit round: the route of the action itself is
// still checked when it is called. A token's holder binding is not part of
// the answer (it is checked against the holder an acquire, renewal or
// release names). 1 to MaxACLChecks checks, else ErrInvalid without a
// request; ErrPermissionDenied without a token under the deny default
// policy, ErrACLNotFound for a secret no token has.
func (a *ACLAPI) Authorize(ctx context.Context, checks []ACLCheck) ([]ACLCheckResult, error) {
	if len(checks) == 0 || len(checks) > MaxACLChecks {
		return nil, fmt.Errorf("%w: %d checks, want 1 to %d", ErrInvalid, len(checks), MaxACLChecks)
	}
	out, _, err := call[wire.ACLAuthorizeResults](ctx, a.c, &request{method: http.MethodPost, path: "/v1/acl/authorize", body: wire.ACLAuthorizeBody{Checks: checks}}, "authorize results")
	if err != nil {
		return nil, err
	}
	if len(out.Checks) != len(checks) {
		return nil, fmt.Errorf("authorize answered %d results for %d checks", len(out.Checks), len(checks))
	}
	return out.Checks, nil
}

// DeleteToken deletes a token; it stops working at once. ErrNotFound if
// there is no such token.
func (a *ACLAPI) DeleteToken(ctx context.Context, accessor string) error {
	if accessor == "" {
		return fmt.Errorf("%w: empty accessor id", ErrInvalid)
	}
	_, err := a.c.do(ctx, &request{method: http.MethodDelete, path: "/v1/acl/token/" + url.PathEscape(accessor)})
	return err
}

func (a *ACLAPI) token(ctx context.Context, r *request) (*ACLToken, error) {
	out, _, err := call[ACLToken](ctx, a.c, r, "token")
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetPolicy creates or replaces the policy called name.
func (a *ACLAPI) SetPolicy(ctx context.Context, name string, spec ACLPolicySpec) (*ACLPolicy, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty policy name", ErrInvalid)
	}
	if spec.Rules == nil {
		spec.Rules = []ACLRule{}
	}
	return a.policy(ctx, &request{method: http.MethodPut, path: "/v1/acl/policy/" + url.PathEscape(name), body: spec})
}

// ReadPolicy reads a policy.
func (a *ACLAPI) ReadPolicy(ctx context.Context, name string) (*ACLPolicy, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty policy name", ErrInvalid)
	}
	return a.policy(ctx, &request{method: http.MethodGet, path: "/v1/acl/policy/" + url.PathEscape(name)})
}

// DeletePolicy deletes a policy; tokens that name it lose its rules.
func (a *ACLAPI) DeletePolicy(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty policy name", ErrInvalid)
	}
	_, err := a.c.do(ctx, &request{method: http.MethodDelete, path: "/v1/acl/policy/" + url.PathEscape(name)})
	return err
}

// ListPolicies lists every policy.
func (a *ACLAPI) ListPolicies(ctx context.Context) ([]ACLPolicy, error) {
	out, _, err := call[ACLPolicyList](ctx, a.c, &request{method: http.MethodGet, path: "/v1/acl/policies"}, "policies")
	if err != nil {
		return nil, err
	}
	return out.Policies, nil
}

func (a *ACLAPI) policy(ctx context.Context, r *request) (*ACLPolicy, error) {
	out, _, err := call[ACLPolicy](ctx, a.c, r, "policy")
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RegisterWorker tells a cluster with ACLs enabled that this client's
// token vouches for worker id serving groups. The balancer then plans keys
// of those groups to the worker (while gossip shows it alive and the token
// still allows it: read on each group, read and write on its keys, and a holder
// binding, if any, that the id's holders fit). Worker.Run calls it when
// the client has a token. ErrACLDisabled from a cluster without ACLs.
func (g *GroupsAPI) RegisterWorker(ctx context.Context, id string, groups []string) error {
	if id == "" {
		return fmt.Errorf("%w: empty worker id", ErrInvalid)
	}
	_, err := g.c.do(ctx, &request{method: http.MethodPost, path: "/v1/workers/" + url.PathEscape(id) + "/register",
		body: WorkerRegistration{Groups: groups}})
	return err
}
