package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/tenure-io/tenure/client/wire"
)

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
	out, err := callOnly[wire.ACLAuthorizeResults](ctx, a.c, &request{method: http.MethodPost, path: "/v1/acl/authorize", body: wire.ACLAuthorizeBody{Checks: checks}}, "authorize results")
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
	return callOnly[ACLToken](ctx, a.c, r, "token")
}

// SetPolicy creates or replaces the policy called name.
func (a *ACLAPI) SetPolicy(ctx context.Context, name string, spec ACLPolicySpec) (*ACLPolicy, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty policy name", ErrInvalid)
	}
	if spec.Rules == nil {
		spec.Rules = []ACLRule{}
	}
	return callOnly[ACLPolicy](ctx, a.c, &request{method: http.MethodPut, path: "/v1/acl/policy/" + url.PathEscape(name), body: spec}, "policy")
}

// ReadPolicy reads a policy.
func (a *ACLAPI) ReadPolicy(ctx context.Context, name string) (*ACLPolicy, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty policy name", ErrInvalid)
	}
	return callOnly[ACLPolicy](ctx, a.c, &request{method: http.MethodGet, path: "/v1/acl/policy/" + url.PathEscape(name)}, "policy")
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
	out, err := callOnly[ACLPolicyList](ctx, a.c, &request{method: http.MethodGet, path: "/v1/acl/policies"}, "policies")
	if err != nil {
		return nil, err
	}
	return out.Policies, nil
}

// RegisterWorker tells a cluster with ACLs enabled that this client's
// token vouches for worker id serving groups. The balancer then plans keys
// of those groups to the worker (while gossip shows it alive and the token
// still allows it: read on each group, read and write on its keys, and a holder
// binding, if any, that the id's holders fit). Worker.Run calls it when
// the client has a token. ErrACLDisabled from a cluster without ACLs.
// Prepared tells the cluster that worker prepared keys of group that the
// plan named it to prepare (Plan's Prepare): each that is still being
// prepared for it becomes its target at once, and its holder is asked to
// hand it back. It answers those keys. With ACLs on, the client's token
// must be one that worker may serve the group with. client/worker calls it
// for a worker with WithPrepare.
func (g *GroupsAPI) Prepared(ctx context.Context, group, worker string, keys []string) ([]string, error) {
	p, err := groupPath(group, "/prepared")
	if err != nil {
		return nil, err
	}
	out, err := callOnly[PreparedBody](ctx, g.c, &request{method: http.MethodPost, path: p, body: PreparedBody{Worker: worker, Keys: keys}}, "prepared")
	if err != nil {
		return nil, err
	}
	return out.Keys, nil
}

func (g *GroupsAPI) RegisterWorker(ctx context.Context, id string, groups []string) error {
	if id == "" {
		return fmt.Errorf("%w: empty worker id", ErrInvalid)
	}
	_, err := g.c.do(ctx, &request{method: http.MethodPost, path: "/v1/workers/" + url.PathEscape(id) + "/register",
		body: WorkerRegistration{Groups: groups}})
	return err
}
