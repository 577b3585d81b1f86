package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/tenure-io/tenure/client"
)

const aclUsage = `Usage: tenure acl <subcommand> [args]

Subcommands:
    bootstrap                     create the first management token (once); prints its secret
    token create -policy P [-policy P2] [-holder-prefix X] [-description D] [-management]
    token list
    token read ACCESSOR
    token self                    the token this command sends
    token delete ACCESSOR
    policy create -name N -rule 'prefix=scenes/:read,write' [-rule ...] [-description D]
    policy list
    policy read NAME
    policy delete NAME

Rights: read, write, revoke, groups, operator, acl (operator and acl only
with an empty prefix: 'prefix=:operator'). A token's secret is printed
once, when it is created; lists show accessor ids only.
`

const aclTokenUsage = `Usage: tenure acl token <create|list|read|self|delete> [args]
`

const aclPolicyUsage = `Usage: tenure acl policy <create|list|read|delete> [args]
`

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// parseRule reads "prefix=P:right,right". The prefix may itself hold ':'
// (keys may), so the rights follow the last one.
func parseRule(s string) (client.ACLRule, error) {
	rest, ok := strings.CutPrefix(s, "prefix=")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return client.ACLRule{}, fmt.Errorf("rule %q: want prefix=PREFIX:RIGHT[,RIGHT...], e.g. prefix=scenes/:read,write", s)
	}
	rule := client.ACLRule{Prefix: rest[:i]}
	for _, r := range strings.Split(rest[i+1:], ",") {
		if r = strings.TrimSpace(r); r != "" {
			rule.Rights = append(rule.Rights, r)
		}
	}
	if len(rule.Rights) == 0 {
		return client.ACLRule{}, fmt.Errorf("rule %q grants no right", s)
	}
	return rule, nil
}

// printToken prints a token; its secret only when it has one (creation).
func (e *env) printToken(t *client.ACLToken) {
	w := e.table()
	row(w, "AccessorID:", t.AccessorID)
	if t.SecretID != "" {
		row(w, "SecretID:", t.SecretID)
	}
	row(w, "Description:", dash(t.Description))
	row(w, "Policies:", dash(strings.Join(t.Policies, ",")))
	row(w, "HolderPrefix:", dash(t.HolderPrefix))
	row(w, "Management:", t.Management)
	w.Flush()
}

func (e *env) aclBootstrap(ctx context.Context, args []string) int {
	return e.query("acl bootstrap", "acl bootstrap", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		t, err := c.ACL().Bootstrap(ctx)
		return t, func() { e.printToken(t) }, err
	})
}

func (e *env) aclTokenCreate(ctx context.Context, args []string) int {
	var spec client.ACLTokenSpec
	var policies listFlag
	fs, cf := e.clusterFlagSet("acl token create", "acl token create -policy P [-policy P2] [-holder-prefix X] [-description D] [-management]")
	fs.Var(&policies, "policy", "policy of the token (repeatable)")
	fs.StringVar(&spec.HolderPrefix, "holder-prefix", "", "bind the token: it may acquire, renew and release only as holders that start with this")
	fs.StringVar(&spec.Description, "description", "", "what the token is for")
	fs.BoolVar(&spec.Management, "management", false, "a management token: every right")
	return e.answer(fs, cf, args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		if len(policies) == 0 && !spec.Management {
			return nil, nil, badUsage("give at least one -policy, or -management")
		}
		spec.Policies = policies
		t, err := c.ACL().CreateToken(ctx, spec)
		return t, func() { e.printToken(t) }, err
	})
}

func (e *env) aclTokenList(ctx context.Context, args []string) int {
	return e.query("acl token list", "acl token list", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		tokens, err := c.ACL().ListTokens(ctx)
		return map[string]any{"tokens": tokens}, func() {
			e.printTable([]any{"ACCESSOR", "POLICIES", "HOLDER PREFIX", "MANAGEMENT", "DESCRIPTION"}, len(tokens), func(i int) []any {
				t := tokens[i]
				return []any{t.AccessorID, dash(strings.Join(t.Policies, ",")), dash(t.HolderPrefix), t.Management, dash(t.Description)}
			})
		}, err
	})
}

func (e *env) aclTokenRead(ctx context.Context, args []string, self bool) int {
	usage, n := "acl token read ACCESSOR", 1
	if self {
		usage, n = "acl token self", 0
	}
	return e.query(usage, usage, args, n, n, func(c *client.Client, pos []string) (any, func(), error) {
		var t *client.ACLToken
		var err error
		if self {
			t, err = c.ACL().Self(ctx)
		} else {
			t, err = c.ACL().ReadToken(ctx, pos[0])
		}
		return t, func() { e.printToken(t) }, err
	})
}

func (e *env) aclTokenDelete(ctx context.Context, args []string) int {
	return e.deleteOne("acl token delete", "acl token delete ACCESSOR", args, "deleted token %s\n", func(c *client.Client, name string) error {
		return c.ACL().DeleteToken(ctx, name)
	})
}

func (e *env) aclPolicyCreate(ctx context.Context, args []string) int {
	var name, desc string
	var rules listFlag
	fs, cf := e.clusterFlagSet("acl policy create", "acl policy create -name N -rule 'prefix=P:RIGHT,RIGHT' [-rule ...] [-description D]")
	fs.StringVar(&name, "name", "", "policy name ([A-Za-z0-9._-]); an existing policy is replaced")
	fs.StringVar(&desc, "description", "", "what the policy is for")
	fs.Var(&rules, "rule", "rule 'prefix=P:RIGHT,RIGHT' (repeatable); rights: read, write, revoke, groups, operator, acl")
	return e.answer(fs, cf, args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		if name == "" {
			return nil, nil, badUsage("-name is required")
		}
		spec := client.ACLPolicySpec{Description: desc, Rules: []client.ACLRule{}}
		for _, r := range rules {
			rule, err := parseRule(r)
			if err != nil {
				return nil, nil, badUsage(err.Error())
			}
			spec.Rules = append(spec.Rules, rule)
		}
		p, err := c.ACL().SetPolicy(ctx, name, spec)
		return p, func() { e.printPolicy(p) }, err
	})
}

func (e *env) printPolicy(p *client.ACLPolicy) {
	fmt.Fprintf(e.stdout, "policy %s", p.Name)
	if p.Description != "" {
		fmt.Fprintf(e.stdout, " (%s)", p.Description)
	}
	fmt.Fprintln(e.stdout)
	for _, r := range p.Rules {
		fmt.Fprintf(e.stdout, "  prefix=%s:%s\n", r.Prefix, strings.Join(r.Rights, ","))
	}
}

func (e *env) aclPolicyList(ctx context.Context, args []string) int {
	return e.query("acl policy list", "acl policy list", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		policies, err := c.ACL().ListPolicies(ctx)
		return map[string]any{"policies": policies}, func() {
			e.printTable([]any{"NAME", "RULES", "DESCRIPTION"}, len(policies), func(i int) []any {
				var rules []string
				for _, r := range policies[i].Rules {
					rules = append(rules, fmt.Sprintf("prefix=%s:%s", r.Prefix, strings.Join(r.Rights, ",")))
				}
				return []any{policies[i].Name, dash(strings.Join(rules, " ")), dash(policies[i].Description)}
			})
		}, err
	})
}

func (e *env) aclPolicyRead(ctx context.Context, args []string) int {
	return e.query("acl policy read", "acl policy read NAME", args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		p, err := c.ACL().ReadPolicy(ctx, pos[0])
		return p, func() { e.printPolicy(p) }, err
	})
}

func (e *env) aclPolicyDelete(ctx context.Context, args []string) int {
	return e.deleteOne("acl policy delete", "acl policy delete NAME", args, "deleted policy %s\n", func(c *client.Client, name string) error {
		return c.ACL().DeletePolicy(ctx, name)
	})
}
