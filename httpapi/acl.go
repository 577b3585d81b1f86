package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// tokenOut is a token as the API shows it; secret is "" except in the
// answer that created it.
func tokenOut(t *fsm.ACLToken, secret string) client.ACLToken {
	out := client.ACLToken{AccessorID: t.AccessorID, SecretID: secret, Description: t.Description, Policies: t.Policies,
		HolderPrefix: t.HolderPrefix, Management: t.Management, CreateIndex: t.CreateIndex}
	if out.Policies == nil {
		out.Policies = []string{}
	}
	if t.CreateTime != 0 {
		out.CreatedAt = time.Unix(0, t.CreateTime).UTC()
	}
	return out
}

func policyOut(p *fsm.ACLPolicy) client.ACLPolicy {
	out := client.ACLPolicy{Name: p.Name, Description: p.Description, Rules: make([]client.ACLRule, len(p.Rules)),
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
	for i, r := range p.Rules {
		out.Rules[i] = client.ACLRule{Prefix: r.Prefix, Rights: r.Rights.Names()}
	}
	return out
}

func (s *Server) aclBootstrap(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	tok, err := s.node.ACL().Bootstrap(ctx)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tokenOut(tok.ACLToken, tok.SecretID))
	return nil
}

func (s *Server) aclCreateToken(w http.ResponseWriter, r *http.Request) error {
	var body client.ACLTokenSpec
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	tok, err := s.node.ACL().CreateToken(ctx, cluster.TokenSpec{Description: body.Description, Policies: body.Policies,
		HolderPrefix: body.HolderPrefix, Management: body.Management})
	if err != nil {
		return err
	}
	s.log.Info("acl_token_created", "accessor", tok.AccessorID, "by", authz(r).AccessorID(),
		"policies", tok.Policies, "holder_prefix", tok.HolderPrefix, "management", tok.Management)
	writeJSON(w, http.StatusOK, tokenOut(tok.ACLToken, tok.SecretID))
	return nil
}

// aclListTokens answers one page of the tokens, by accessor id (see
// list_page.go), streamed.
func (s *Server) aclListTokens(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	tokens, next, index, err := s.node.ACL().TokensPage(r.Context(), p.After, p.Limit, consistency(r))
	if err != nil {
		return err
	}
	s.readHeaders(w, index)
	writeStream(w, listAnswer{field: "tokens", n: len(tokens), item: func(i int) any { return tokenOut(tokens[i], "") }, index: index, after: next})
	return nil
}

// aclReadToken answers a token without its secret. The ACL reads answer
// the index and staleness headers as every read does (readHeaders), and do
// not block, as aclListTokens: a token never changes once created, so its
// index is its create_index; a policy's is its modify_index; the list of
// policies', the index of the last ACL change.
func (s *Server) aclReadToken(w http.ResponseWriter, r *http.Request) error {
	tok, err := s.node.ACL().Token(r.Context(), pathVar(r, "accessor"), consistency(r))
	if err != nil {
		return err
	}
	s.readHeaders(w, tok.CreateIndex)
	writeJSON(w, http.StatusOK, tokenOut(tok, ""))
	return nil
}

func (s *Server) aclSelf(w http.ResponseWriter, r *http.Request) error {
	accessor := authz(r).AccessorID()
	if accessor == "" {
		return fmt.Errorf("the request carried no token: %w", cluster.ErrNotFound)
	}
	tok, err := s.node.ACL().Token(r.Context(), accessor, consistency(r))
	if err != nil {
		return err
	}
	s.readHeaders(w, tok.CreateIndex)
	writeJSON(w, http.StatusOK, tokenOut(tok, ""))
	return nil
}

func (s *Server) aclDeleteToken(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	if err := s.node.ACL().DeleteToken(ctx, pathVar(r, "accessor")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) aclSetPolicy(w http.ResponseWriter, r *http.Request) error {
	var body client.ACLPolicySpec
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	spec := cluster.PolicySpec{Name: pathVar(r, "name"), Description: body.Description, Rules: make([]fsm.ACLRule, len(body.Rules))}
	for i, rule := range body.Rules {
		spec.Rules[i].Prefix = rule.Prefix
		for _, name := range rule.Rights {
			right, err := fsm.ParseRight(name)
			if err != nil {
				return badRequest(client.CodeInvalidRules, "rules", fmt.Sprintf("rules[%d]: %v", i, err))
			}
			spec.Rules[i].Rights |= right
		}
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	p, err := s.node.ACL().SetPolicy(ctx, spec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, policyOut(p))
	return nil
}

func (s *Server) aclListPolicies(w http.ResponseWriter, r *http.Request) error {
	policies, index, err := s.node.ACL().Policies(r.Context(), consistency(r))
	if err != nil {
		return err
	}
	out := client.ACLPolicyList{Policies: make([]client.ACLPolicy, len(policies)), Index: index}
	for i, p := range policies {
		out.Policies[i] = policyOut(p)
	}
	s.readHeaders(w, index)
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) aclReadPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := s.node.ACL().Policy(r.Context(), pathVar(r, "name"), consistency(r))
	if err != nil {
		return err
	}
	s.readHeaders(w, p.ModifyIndex)
	writeJSON(w, http.StatusOK, policyOut(p))
	return nil
}

func (s *Server) aclDeletePolicy(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	if err := s.node.ACL().DeletePolicy(ctx, pathVar(r, "name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// registerWorker: the token must let the worker's holders (id#…) through
// its binding, read each group, and acquire each group's keys
// (cluster.Node.WorkerAllowed).
func (s *Server) registerWorker(w http.ResponseWriter, r *http.Request) error {
	var body client.WorkerRegistration
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	if err := s.node.RegisterWorker(ctx, authz(r), pathVar(r, "id"), body.Groups); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
