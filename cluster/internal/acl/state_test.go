package acl_test

import (
	"errors"
	"testing"

	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/fsm"
)

// state is a replicated state held in maps.
type state struct {
	tokens   map[string]*fsm.ACLToken // by accessor
	policies map[string]*fsm.ACLPolicy
	regs     map[string]*fsm.WorkerRegistration
	groups   map[string]*fsm.Group
}

func (s *state) ACLTokenByHash(hash string) *fsm.ACLToken {
	for _, t := range s.tokens {
		if t.SecretHash == hash {
			return t
		}
	}
	return nil
}
func (s *state) ACLToken(accessor string) *fsm.ACLToken              { return s.tokens[accessor] }
func (s *state) ACLPolicy(name string) *fsm.ACLPolicy                { return s.policies[name] }
func (s *state) WorkerRegistration(w string) *fsm.WorkerRegistration { return s.regs[w] }
func (s *state) Group(name string) *fsm.Group                        { return s.groups[name] }

func newState() *state {
	return &state{
		tokens: map[string]*fsm.ACLToken{
			"parts":  {AccessorID: "parts", SecretHash: acl.HashSecret("s-parts"), Policies: []string{"parts"}, HolderPrefix: "worker-"},
			"narrow": {AccessorID: "narrow", SecretHash: acl.HashSecret("s-narrow"), Policies: []string{"narrow"}},
		},
		policies: map[string]*fsm.ACLPolicy{
			"parts":  {Name: "parts", Rules: []fsm.ACLRule{{Prefix: "parts", Rights: fsm.RightRead | fsm.RightWrite}}},
			"narrow": {Name: "narrow", Rules: []fsm.ACLRule{{Prefix: "parts/1", Rights: fsm.RightRead | fsm.RightWrite}}},
		},
		regs: map[string]*fsm.WorkerRegistration{
			"worker-1": {Worker: "worker-1", Groups: []string{"parts"}, Accessor: "parts"},
			"worker-2": {Worker: "worker-2", Groups: []string{"parts"}, Accessor: "gone"},
			"narrow-1": {Worker: "narrow-1", Groups: []string{"parts"}, Accessor: "narrow"},
		},
		groups: map[string]*fsm.Group{"parts": {Name: "parts", Keys: []string{"parts/1", "parts/2"}}},
	}
}

func TestResolve(t *testing.T) {
	s := newState()
	a, err := acl.Resolve(s, acl.Deny, "s-parts")
	if err != nil || a.AccessorID() != "parts" {
		t.Fatalf("Resolve(s-parts) = %v, %v; want the token parts", a, err)
	}
	if _, err := acl.Resolve(s, acl.Deny, "nope"); !errors.Is(err, acl.ErrTokenNotFound) {
		t.Errorf("Resolve of an unknown secret = %v, want ErrTokenNotFound", err)
	}
	anon, err := acl.Resolve(s, acl.Deny, "")
	if err != nil || anon.Actor() != "anonymous" || anon.AllowAny() == nil {
		t.Errorf("Resolve without a secret under deny = %v, %v; want an anonymous Authorizer that needs a token", anon, err)
	}
}

func TestAdmit(t *testing.T) {
	s := newState()
	tests := []struct {
		name, policy, worker, group string
		want                        bool
	}{
		{"registered, token allows", acl.Deny, "worker-1", "parts", true},
		{"registered for another group", acl.Deny, "worker-1", "other", false},
		{"token deleted", acl.Deny, "worker-2", "parts", false},
		{"token cannot take every key", acl.Deny, "narrow-1", "parts", false},
		{"unregistered under deny", acl.Deny, "free-1", "parts", false},
		{"unregistered under allow", acl.Allow, "free-1", "parts", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := acl.Admit(s, tt.policy, tt.worker, tt.group); got != tt.want {
				t.Errorf("Admit(%s, %s) under %s = %t, want %t", tt.worker, tt.group, tt.policy, got, tt.want)
			}
		})
	}
}
