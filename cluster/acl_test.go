package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

var allRights = []fsm.Right{fsm.RightRead, fsm.RightWrite, fsm.RightRevoke, fsm.RightGroups, fsm.RightOperator, fsm.RightACL}

// authorizer is the Authorizer of a token with the given policies.
func authorizer(tok fsm.ACLToken, policies ...fsm.ACLPolicy) *cluster.Authorizer {
	byName := map[string]*fsm.ACLPolicy{}
	for i := range policies {
		byName[policies[i].Name] = &policies[i]
		tok.Policies = append(tok.Policies, policies[i].Name)
	}
	return cluster.NewAuthorizer(&tok, func(name string) *fsm.ACLPolicy { return byName[name] })
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
				if r != granted && !errors.Is(err, cluster.ErrPermissionDenied) {
					t.Errorf("Allow(%s, scenes/1) = %v, want permission denied", r, err)
				}
			}
			if granted&fsm.ClusterRights == 0 {
				if err := a.Allow(granted, "key", "other/1"); !errors.Is(err, cluster.ErrPermissionDenied) {
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

// A cluster right in a rule with a prefix is never honoured (ValidatePolicy
// refuses such a rule; a stored one could only come from a bug).
func TestAuthorizerClusterRightsNeedAnEmptyPrefix(t *testing.T) {
	a := authorizer(fsm.ACLToken{AccessorID: "acc"}, fsm.ACLPolicy{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a", Rights: fsm.RightOperator | fsm.RightACL | fsm.RightRead}}})
	if err := a.AllowCluster(fsm.RightOperator); err == nil {
		t.Error("operator granted by a rule with a prefix")
	}
	if got := a.Rights("abc"); got != fsm.RightRead {
		t.Errorf("Rights(abc) = %s, want read", got)
	}
	err := cluster.ValidatePolicy(cluster.PolicySpec{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a", Rights: fsm.RightOperator}}})
	if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), "empty prefix") {
		t.Errorf("ValidatePolicy of operator on a prefix = %v, want invalid naming the empty prefix", err)
	}
}

func TestValidatePolicy(t *testing.T) {
	rule := []fsm.ACLRule{{Prefix: "a/", Rights: fsm.RightRead}}
	tests := []struct {
		name  string
		spec  cluster.PolicySpec
		field string // "" for valid
	}{
		{"valid", cluster.PolicySpec{Name: "scenes-rw_1.0", Rules: rule}, ""},
		{"valid without rules", cluster.PolicySpec{Name: "empty"}, ""},
		{"cluster rights on the empty prefix", cluster.PolicySpec{Name: "ops", Rules: []fsm.ACLRule{{Rights: fsm.RightOperator | fsm.RightACL}}}, ""},
		{"empty name", cluster.PolicySpec{Rules: rule}, "name"},
		{"slash in name", cluster.PolicySpec{Name: "a/b"}, "name"},
		{"no rights", cluster.PolicySpec{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a"}}}, "rules"},
		{"metrics on a prefix", cluster.PolicySpec{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a", Rights: fsm.RightMetrics}}}, "rules"},
		{"long description", cluster.PolicySpec{Name: "p", Description: strings.Repeat("d", 300)}, "description"},
	}
	for _, tt := range tests {
		err := cluster.ValidatePolicy(tt.spec)
		var inv *cluster.InvalidError
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
		if err != nil && (!errors.Is(err, cluster.ErrPermissionDenied) || !strings.Contains(err.Error(), `"tracker-"`)) {
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

// Start one node with ACLs on.
func startACLNode(t *testing.T, defaultPolicy string) *cluster.Node {
	t.Helper()
	c := inproc.Start(t, 1, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.ACLEnabled = true
		cfg.ACLDefaultPolicy = defaultPolicy
	}})
	return c.Node(c.Leader())
}

func TestResolveToken(t *testing.T) {
	ctx := context.Background()
	n := startACLNode(t, cluster.ACLDeny)
	boot, err := n.ACL().Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.ACL().Bootstrap(ctx); !errors.Is(err, cluster.ErrACLBootstrapped) {
		t.Fatalf("second bootstrap: %v, want ErrACLBootstrapped", err)
	}
	if boot.SecretID == "" || boot.SecretID == boot.AccessorID || boot.SecretHash != cluster.HashSecret(boot.SecretID) {
		t.Fatalf("bootstrap token %+v: want a secret, distinct from the accessor, stored as its hash", boot)
	}
	a, err := n.ResolveToken(boot.SecretID)
	if err != nil || a.AccessorID() != boot.AccessorID || a.AllowCluster(fsm.RightACL) != nil {
		t.Fatalf("ResolveToken(boot) = %v, %v; want the management token", a, err)
	}
	if _, err := n.ResolveToken("not-a-secret"); !errors.Is(err, cluster.ErrACLNotFound) {
		t.Errorf("ResolveToken(unknown) = %v, want ErrACLNotFound", err)
	}
	anon, err := n.ResolveToken("")
	if err != nil || anon.Allow(fsm.RightRead, "key", "k") == nil {
		t.Errorf("anonymous under deny: %v, read allowed %v; want refused", err, anon.Allow(fsm.RightRead, "key", "k") == nil)
	}
	if err := anon.Allow(fsm.RightRead, "key", "k"); !strings.Contains(err.Error(), "no token") {
		t.Errorf("anonymous refusal %q does not say there was no token", err)
	}
	if _, err := n.ACL().CreateToken(ctx, cluster.TokenSpec{Policies: []string{"missing"}}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("token naming a missing policy: %v, want invalid", err)
	}
	if err := n.ACL().DeleteToken(ctx, boot.AccessorID); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ResolveToken(boot.SecretID); !errors.Is(err, cluster.ErrACLNotFound) {
		t.Errorf("ResolveToken after delete = %v, want ErrACLNotFound", err)
	}
}

func TestAnonymousUnderAllowAndWithACLsOff(t *testing.T) {
	n := startACLNode(t, cluster.ACLAllow)
	anon, err := n.ResolveToken("")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range allRights {
		err := anon.Allow(r, "key", "k")
		if (err == nil) != (r != fsm.RightACL) {
			t.Errorf("anonymous under allow: Allow(%s) = %v; want every right but acl", r, err)
		}
	}
	off := inproc.Start(t, 1, inproc.Options{})
	a, err := off.Node(off.Leader()).ResolveToken("whatever")
	if err != nil || a.Enabled() || a.Allow(fsm.RightACL, "cluster", "") != nil {
		t.Errorf("ACLs off: %v, %v; want everything allowed", a, err)
	}
}

// With ACLs on, the balancer gives a worker keys only while a token that
// still exists, and still allows it, registered it for the group.
func TestWorkerAdmission(t *testing.T) {
	ctx := context.Background()
	n := startACLNode(t, cluster.ACLDeny)
	if _, err := n.ACL().Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "parts", Prefix: "parts/", Count: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "other", Keys: []string{"other/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ACL().SetPolicy(ctx, cluster.PolicySpec{Name: "workers", Rules: []fsm.ACLRule{
		{Prefix: "parts", Rights: fsm.RightRead}, {Prefix: "parts/", Rights: fsm.RightWrite}, {Prefix: "blind/", Rights: fsm.RightWrite}}}); err != nil {
		t.Fatal(err)
	}
	tok, err := n.ACL().CreateToken(ctx, cluster.TokenSpec{Policies: []string{"workers"}, HolderPrefix: "worker-"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.ResolveToken(tok.SecretID)
	if err != nil {
		t.Fatal(err)
	}
	if cluster.AdmitWorker(n, "worker-1", "parts") {
		t.Error("an unregistered worker is admitted under deny")
	}
	if err := n.RegisterWorker(ctx, a, "other-1", []string{"parts"}); !errors.Is(err, cluster.ErrPermissionDenied) {
		t.Errorf("registering a worker outside the holder prefix: %v, want permission denied", err)
	}
	if err := n.RegisterWorker(ctx, a, "worker-1", []string{"other"}); !errors.Is(err, cluster.ErrPermissionDenied) {
		t.Errorf("registering for a group the token cannot read: %v, want permission denied", err)
	}
	if err := n.RegisterWorker(ctx, a, "worker-1", []string{"parts"}); err != nil {
		t.Fatalf("RegisterWorker: %v", err)
	}
	if !cluster.AdmitWorker(n, "worker-1", "parts") {
		t.Error("a registered worker is not admitted")
	}
	if cluster.AdmitWorker(n, "worker-1", "other") {
		t.Error("a worker is admitted to a group it did not register for")
	}
	// A key the token cannot acquire joins the group: the worker is no
	// longer admitted to it.
	if _, err := n.GroupKeys(ctx, "parts", []string{"secret/1"}, nil); err != nil {
		t.Fatal(err)
	}
	if cluster.AdmitWorker(n, "worker-1", "parts") {
		t.Error("worker admitted to a group with a key its token cannot acquire")
	}
	if _, err := n.GroupKeys(ctx, "parts", nil, []string{"secret/1"}); err != nil {
		t.Fatal(err)
	}
	// Nor one it may acquire but not read: the group's answers leave such
	// keys out, so the worker would never see its targets there.
	if _, err := n.GroupKeys(ctx, "parts", []string{"blind/1"}, nil); err != nil {
		t.Fatal(err)
	}
	if cluster.AdmitWorker(n, "worker-1", "parts") {
		t.Error("worker admitted to a group with a key its token may acquire but not read")
	}
	if err := n.RegisterWorker(ctx, a, "worker-1", []string{"parts"}); !errors.Is(err, cluster.ErrPermissionDenied) || !strings.Contains(err.Error(), `"blind/1"`) {
		t.Errorf("registering for a group with a key the token cannot read: %v, want permission denied naming blind/1", err)
	}
	if _, err := n.GroupKeys(ctx, "parts", nil, []string{"blind/1"}); err != nil {
		t.Fatal(err)
	}
	if err := n.ACL().DeleteToken(ctx, tok.AccessorID); err != nil {
		t.Fatal(err)
	}
	if cluster.AdmitWorker(n, "worker-1", "parts") {
		t.Error("worker still admitted after its token was deleted")
	}
}
