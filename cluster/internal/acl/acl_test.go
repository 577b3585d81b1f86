package acl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
)

var allRights = []fsm.Right{fsm.RightRead, fsm.RightWrite, fsm.RightRevoke, fsm.RightGroups, fsm.RightOperator, fsm.RightACL}

// authorizer is the Authorizer of a token with the given policies.
func authorizer(tok fsm.ACLToken, policies ...fsm.ACLPolicy) *acl.Authorizer {
	byName := map[string]*fsm.ACLPolicy{}
	for i := range policies {
		byName[policies[i].Name] = &policies[i]
		tok.Policies = append(tok.Policies, policies[i].Name)
	}
	return acl.NewAuthorizer(&tok, func(name string) *fsm.ACLPolicy { return byName[name] })
}

// A token whose one rule grants one right has that right and no other:
// key rights on names under the rule's prefix only, cluster rights
// everywhere.
func TestAuthorizerEveryRightGrantedAndRefused(t *testing.T) {
	for _, granted := range allRights {
		t.Run(granted.String(), func(t *testing.T) {
			prefix := "scenes/"
			if granted&fsm.ClusterRights != 0 {
				prefix = ""
			}
			a := authorizer(fsm.ACLToken{AccessorID: "acc"}, fsm.ACLPolicy{Name: "p", Rules: []fsm.ACLRule{{Prefix: prefix, Rights: granted}}})
			for _, r := range allRights {
				err := a.Allow(r, "key", "scenes/1")
				if r == granted && err != nil {
					t.Errorf("Allow(%s, scenes/1) = %v, want nil", r, err)
				}
				if r != granted && !errors.Is(err, acl.ErrPermissionDenied) {
					t.Errorf("Allow(%s, scenes/1) = %v, want permission denied", r, err)
				}
			}
			if granted&fsm.ClusterRights == 0 {
				if err := a.Allow(granted, "key", "other/1"); !errors.Is(err, acl.ErrPermissionDenied) {
					t.Errorf("Allow(%s, other/1) = %v, want permission denied outside the prefix", granted, err)
				}
			}
		})
	}
}

func TestAuthorizerPrefixMatching(t *testing.T) {
	a := authorizer(fsm.ACLToken{AccessorID: "acc"},
		fsm.ACLPolicy{Name: "scenes", Rules: []fsm.ACLRule{{Prefix: "scenes/", Rights: fsm.RightRead | fsm.RightWrite}}},
		fsm.ACLPolicy{Name: "jobs", Rules: []fsm.ACLRule{{Prefix: "jobs/", Rights: fsm.RightRead}, {Prefix: "jobs/nightly", Rights: fsm.RightWrite}}},
	)
	tests := []struct {
		right      fsm.Right
		kind, name string
		ok         bool
	}{
		{fsm.RightWrite, "key", "scenes/01", true},
		{fsm.RightWrite, "key", "scenes/", true},
		{fsm.RightWrite, "key", "scenes", false},
		{fsm.RightWrite, "key", "xscenes/01", false},
		{fsm.RightRead, "prefix", "scenes/1", true}, // a list under the rule's prefix
		{fsm.RightRead, "prefix", "sc", false},      // a list wider than it
		{fsm.RightRead, "prefix", "", false},        // every lease
		{fsm.RightWrite, "key", "jobs/weekly", false},
		{fsm.RightWrite, "key", "jobs/nightly-2", true}, // rights of matching rules add up
		{fsm.RightRead | fsm.RightWrite, "key", "jobs/nightly", true},
		{fsm.RightRevoke, "key", "scenes/01", false},
		{fsm.RightOperator, "cluster", "", false},
	}
	for _, tt := range tests {
		err := a.Allow(tt.right, tt.kind, tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("Allow(%s, %s %q) = %v, want allowed %v", tt.right, tt.kind, tt.name, err, tt.ok)
		}
	}
}

// A cluster right in a rule with a prefix is never honoured (CheckPolicy
// refuses such a rule; a stored one could only come from a bug).
func TestAuthorizerClusterRightsNeedAnEmptyPrefix(t *testing.T) {
	a := authorizer(fsm.ACLToken{AccessorID: "acc"}, fsm.ACLPolicy{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a", Rights: fsm.RightOperator | fsm.RightACL | fsm.RightRead}}})
	if err := a.AllowCluster(fsm.RightOperator); err == nil {
		t.Error("operator granted by a rule with a prefix")
	}
	if got := a.Rights("abc"); got != fsm.RightRead {
		t.Errorf("Rights(abc) = %s, want read", got)
	}
	err := acl.CheckPolicy(acl.PolicySpec{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a", Rights: fsm.RightOperator}}})
	var fe *check.InvalidError
	if !errors.As(err, &fe) || fe.Field != "rules" || !strings.Contains(err.Error(), "empty prefix") {
		t.Errorf("CheckPolicy of operator on a prefix = %v, want invalid naming the empty prefix", err)
	}
}

func TestCheckPolicy(t *testing.T) {
	rule := []fsm.ACLRule{{Prefix: "a/", Rights: fsm.RightRead}}
	tests := []struct {
		name  string
		spec  acl.PolicySpec
		field string // "" for valid
	}{
		{"valid", acl.PolicySpec{Name: "scenes-rw_1.0", Rules: rule}, ""},
		{"valid without rules", acl.PolicySpec{Name: "empty"}, ""},
		{"cluster rights on the empty prefix", acl.PolicySpec{Name: "ops", Rules: []fsm.ACLRule{{Rights: fsm.RightOperator | fsm.RightACL}}}, ""},
		{"empty name", acl.PolicySpec{Rules: rule}, "name"},
		{"slash in name", acl.PolicySpec{Name: "a/b"}, "name"},
		{"no rights", acl.PolicySpec{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a"}}}, "rules"},
		{"metrics on a prefix", acl.PolicySpec{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a", Rights: fsm.RightMetrics}}}, "rules"},
		{"long description", acl.PolicySpec{Name: "p", Description: strings.Repeat("d", 300)}, "description"},
	}
	for _, tt := range tests {
		err := acl.CheckPolicy(tt.spec)
		var inv *check.InvalidError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v, want valid", tt.name, err)
		case tt.field != "" && (!errors.As(err, &inv) || inv.Field != tt.field):
			t.Errorf("%s: %v, want invalid %s", tt.name, err, tt.field)
		}
	}
}

func TestAuthorizerHolderBinding(t *testing.T) {
	bound := authorizer(fsm.ACLToken{AccessorID: "acc", HolderPrefix: "tracker-"},
		fsm.ACLPolicy{Name: "p", Rules: []fsm.ACLRule{{Prefix: "", Rights: fsm.RightWrite}}})
	for holder, ok := range map[string]bool{"tracker-1": true, "tracker-": true, "tracker": false, "worker-1": false, "": false} {
		err := bound.AllowHolder(holder)
		if (err == nil) != ok {
			t.Errorf("AllowHolder(%q) = %v, want allowed %v", holder, err, ok)
		}
		if err != nil && (!errors.Is(err, acl.ErrPermissionDenied) || !strings.Contains(err.Error(), `"tracker-"`)) {
			t.Errorf("AllowHolder(%q) = %v, want permission denied naming the prefix", holder, err)
		}
	}
	unbound := authorizer(fsm.ACLToken{AccessorID: "acc"})
	if err := unbound.AllowHolder("anyone"); err != nil {
		t.Errorf("unbound AllowHolder = %v", err)
	}
	// A management token has every right everywhere, and its binding still
	// holds.
	mgmt := authorizer(fsm.ACLToken{AccessorID: "m", Management: true, HolderPrefix: "ops-"})
	for _, r := range allRights {
		if err := mgmt.Allow(r, "key", "anything"); err != nil {
			t.Errorf("management Allow(%s) = %v", r, err)
		}
	}
	if err := mgmt.AllowHolder("other"); err == nil {
		t.Error("the binding of a management token was ignored")
	}
}

// The messages say which right was missing, on what, and for whom.
func TestPermissionErrorNamesRightAndName(t *testing.T) {
	a := authorizer(fsm.ACLToken{AccessorID: "7e6d"})
	err := a.Allow(fsm.RightWrite, "key", "scenes/1")
	for _, want := range []string{"7e6d", `"write"`, `key "scenes/1"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	err = a.Allow(fsm.RightRead, "prefix", "")
	if !strings.Contains(err.Error(), `prefix ""`) {
		t.Errorf("error %q does not name the empty prefix", err)
	}
}
