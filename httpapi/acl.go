package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// tokenOut is a token as the API shows it; secret is "" except in the
// answer that created it.
func tokenOut(t *fsm.ACLToken, secret string) wire.ACLToken {
	out := wire.ACLToken{AccessorID: t.AccessorID, SecretID: secret, Description: t.Description, Policies: t.Policies,
		HolderPrefix: t.HolderPrefix, Management: t.Management, CreateIndex: t.CreateIndex}
	if out.Policies == nil {
		out.Policies = []string{}
	}
	if t.CreateTime != 0 {
		out.CreatedAt = time.Unix(0, t.CreateTime).UTC()
	}
	return out
}

func policyOut(p *fsm.ACLPolicy) wire.ACLPolicy {
	out := wire.ACLPolicy{Name: p.Name, Description: p.Description, Rules: make([]wire.ACLRule, len(p.Rules)),
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
	for i, r := range p.Rules {
		out.Rules[i] = wire.ACLRule{Prefix: r.Prefix, Rights: r.Rights.Names()}
	}
	return out
}

func (s *Server) aclBootstrap(w http.ResponseWriter, r *http.Request) error {
	return s.write(w, r, func(ctx context.Context) (any, error) {
		tok, err := s.node.ACLs.Bootstrap(ctx)
		if err != nil {
			return nil, err
		}
		return tokenOut(tok.ACLToken, tok.SecretID), nil
	})
}

func (s *Server) aclCreateToken(w http.ResponseWriter, r *http.Request) error {
	var body wire.ACLTokenSpec
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		tok, err := s.node.ACLs.CreateToken(ctx, cluster.TokenSpec{Description: body.Description, Policies: body.Policies,
			HolderPrefix: body.HolderPrefix, Management: body.Management})
		if err != nil {
			return nil, err
		}
		s.log.Info("acl_token_created", "accessor", tok.AccessorID, "by", authz(r).AccessorID(),
			"policies", tok.Policies, "holder_prefix", tok.HolderPrefix, "management", tok.Management)
		return tokenOut(tok.ACLToken, tok.SecretID), nil
	})
}

// aclListTokens answers one page of the tokens, by accessor id (see
// list_page.go), streamed.
func (s *Server) aclListTokens(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	tokens, next, index, err := s.node.ACLs.TokensPage(r.Context(), p.After, p.Limit, consistency(r))
	if err != nil {
		return err
	}
	return s.writeRead(w, index, listAnswer{field: "tokens", n: len(tokens), item: func(i int) any { return tokenOut(tokens[i], "") }, index: index, after: next})
}

// aclReadToken answers a token without its secret. The ACL reads answer
// the index and staleness headers as every read does (readHeaders), and do
// not block, as aclListTokens: a token never changes once created, so its
// index is its create_index; a policy's is its modify_index; the list of
// policies', the index of the last ACL change.
func (s *Server) aclReadToken(w http.ResponseWriter, r *http.Request) error {
	return s.readToken(w, r, pathVar(r, "accessor"))
}

func (s *Server) aclSelf(w http.ResponseWriter, r *http.Request) error {
	accessor := authz(r).AccessorID()
	if accessor == "" {
		return fmt.Errorf("the request carried no token: %w", cluster.ErrNotFound)
	}
	return s.readToken(w, r, accessor)
}

// readToken answers the token of accessor without its secret.
func (s *Server) readToken(w http.ResponseWriter, r *http.Request, accessor string) error {
	tok, err := s.node.ACLs.Token(r.Context(), accessor, consistency(r))
	if err != nil {
		return err
	}
	return s.writeRead(w, tok.CreateIndex, tokenOut(tok, ""))
}

// aclAuthorize answers POST /v1/acl/authorize: for each check, in order,
// whether the request's token gets through the guard of the routes that
// need that right on that name. Any token may ask, about itself. This node
// answers from its own replicated copy of the ACL state, as it checks the
// stale reads it serves: it may lag the leader by a commit round (a policy
// just changed may not show yet), which is safe because the answer only
// says which actions to offer, and each action's route is checked again
// when it is called. A holder binding is not part of the answer, as it is
// not part of a route's guard: acquire, renew and release check it against
// the holder they name.
func (s *Server) aclAuthorize(w http.ResponseWriter, r *http.Request) error {
	var body wire.ACLAuthorizeBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if n := len(body.Checks); n == 0 || n > wire.MaxACLChecks {
		return badRequest(wire.CodeInvalidBody, "checks", fmt.Sprintf("checks: %d checks, want 1 to %d", n, wire.MaxACLChecks))
	}
	// Every check is read before any is answered: a bad one refuses the
	// whole call.
	needs := make([]need, len(body.Checks))
	names := make([]string, len(body.Checks))
	for i, c := range body.Checks {
		var err error
		if needs[i], names[i], err = checkNeed(fmt.Sprintf("checks[%d]", i), c); err != nil {
			return err
		}
	}
	a := authz(r)
	out := wire.ACLAuthorizeResults{Checks: make([]wire.ACLCheckResult, len(body.Checks))}
	for i, c := range body.Checks {
		out.Checks[i] = wire.ACLCheckResult{ACLCheck: c, Allowed: needs[i].allows(a, names[i]) == nil}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// checkKind is a kind of name that a check may give: the need of the
// routes that check a right on such a name (authz.go), the rule of the
// name, and the code of a name that breaks it.
type checkKind struct {
	kind  string
	need  func(fsm.Right) need
	code  string
	name  func(c *wire.ACLCheck) *string
	valid func(name string) error
}

var checkKinds = []checkKind{
	{"key", onKey, wire.CodeInvalidKey, func(c *wire.ACLCheck) *string { return c.Key }, fsm.ValidateKey},
	{"prefix", onPrefix, wire.CodeInvalidPrefix, func(c *wire.ACLCheck) *string { return c.Prefix }, func(p string) error {
		if len(p) > fsm.MaxKeyLen {
			return fmt.Errorf("%d bytes, the limit is %d", len(p), fsm.MaxKeyLen)
		}
		return nil
	}},
	{"group", onGroup, wire.CodeInvalidName, func(c *wire.ACLCheck) *string { return c.Group }, func(g string) error { return cluster.ValidateName("group", g) }},
	{"worker", onWorker, wire.CodeInvalidWorker, func(c *wire.ACLCheck) *string { return c.Worker }, func(id string) error { return cluster.ValidateName("worker", id) }},
}

// checkNeed reads one check of an authorize body: the need it asks about
// (built as the routes build theirs) and the name it asks it on. field is
// the check's place in the body ("checks[3]"), for the errors: 400 naming
// the field and the rule it breaks.
func checkNeed(field string, c wire.ACLCheck) (need, string, error) {
	if c.Right == "" {
		return need{}, "", badRequest(wire.CodeInvalidBody, field+".right", field+".right: required, one of read, write, revoke, groups, operator, acl")
	}
	right, err := fsm.ParseRight(c.Right)
	if err != nil {
		return need{}, "", badRequest(wire.CodeInvalidBody, field+".right", fmt.Sprintf("%s.right: %v", field, err))
	}
	clusterRight := right&fsm.ClusterRights != 0
	var given *checkKind
	var name string
	for i := range checkKinds {
		k := &checkKinds[i]
		v := k.name(&c)
		if v == nil {
			continue
		}
		f := field + "." + k.kind
		switch {
		case clusterRight:
			return need{}, "", badRequest(wire.CodeInvalidBody, f, fmt.Sprintf("%s: %s is a cluster right, checked on no name: give no key, prefix, group or worker", f, c.Right))
		case given != nil:
			return need{}, "", badRequest(wire.CodeInvalidBody, f, fmt.Sprintf("%s: give one of key, prefix, group or worker, not both %s and %s", f, given.kind, k.kind))
		}
		if err := k.valid(*v); err != nil {
			var inv *cluster.InvalidError
			if errors.As(err, &inv) {
				err = inv.Err
			}
			return need{}, "", badRequest(k.code, f, fmt.Sprintf("%s: %v", f, err))
		}
		given, name = k, *v
	}
	switch {
	case clusterRight:
		return onCluster(right), "", nil
	case given == nil:
		return need{}, "", badRequest(wire.CodeInvalidBody, field, fmt.Sprintf("%s: %s needs the name it is asked on: one of key, prefix, group or worker", field, c.Right))
	}
	return given.need(right), name, nil
}

func (s *Server) aclDeleteToken(w http.ResponseWriter, r *http.Request) error {
	return s.write(w, r, func(ctx context.Context) (any, error) {
		return nil, s.node.ACLs.DeleteToken(ctx, pathVar(r, "accessor"))
	})
}

func (s *Server) aclSetPolicy(w http.ResponseWriter, r *http.Request) error {
	var body wire.ACLPolicySpec
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	spec := cluster.PolicySpec{Name: pathVar(r, "name"), Description: body.Description, Rules: make([]fsm.ACLRule, len(body.Rules))}
	for i, rule := range body.Rules {
		spec.Rules[i].Prefix = rule.Prefix
		for _, name := range rule.Rights {
			right, err := fsm.ParseRight(name)
			if err != nil {
				return badRequest(wire.CodeInvalidRules, "rules", fmt.Sprintf("rules[%d]: %v", i, err))
			}
			spec.Rules[i].Rights |= right
		}
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		p, err := s.node.ACLs.SetPolicy(ctx, spec)
		if err != nil {
			return nil, err
		}
		return policyOut(p), nil
	})
}

func (s *Server) aclListPolicies(w http.ResponseWriter, r *http.Request) error {
	policies, index, err := s.node.ACLs.Policies(r.Context(), consistency(r))
	if err != nil {
		return err
	}
	out := wire.ACLPolicyList{Policies: make([]wire.ACLPolicy, len(policies)), Index: index}
	for i, p := range policies {
		out.Policies[i] = policyOut(p)
	}
	return s.writeRead(w, index, out)
}

func (s *Server) aclReadPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := s.node.ACLs.Policy(r.Context(), pathVar(r, "name"), consistency(r))
	if err != nil {
		return err
	}
	return s.writeRead(w, p.ModifyIndex, policyOut(p))
}

func (s *Server) aclDeletePolicy(w http.ResponseWriter, r *http.Request) error {
	return s.write(w, r, func(ctx context.Context) (any, error) { return nil, s.node.ACLs.DeletePolicy(ctx, pathVar(r, "name")) })
}

// registerWorker: the token must let the worker's holders (id#…) through
// its binding, read each group, and acquire each group's keys
// (cluster.Node.WorkerAllowed).
// prepared records a worker's word that it prepared keys of a group (a
// warm hand-off); the token is checked in cluster.Node.Prepared.
func (s *Server) prepared(w http.ResponseWriter, r *http.Request) error {
	var body wire.PreparedBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		keys, err := s.node.Placement.Prepared(ctx, authz(r), groupName(r), body.Worker, body.Keys)
		if err != nil {
			return nil, err
		}
		return wire.PreparedBody{Worker: body.Worker, Keys: keys}, nil
	})
}

func (s *Server) registerWorker(w http.ResponseWriter, r *http.Request) error {
	var body wire.WorkerRegistration
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		return nil, s.node.Placement.RegisterWorker(ctx, authz(r), pathVar(r, "id"), body.Groups)
	})
}
