package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/forgeraft"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

var allRights = []fsm.Right{fsm.RightRead, fsm.RightWrite, fsm.RightRevoke, fsm.RightGroups, fsm.RightOperator, fsm.RightACL}

// ValidatePolicy's refusals are invalid arguments that name the field.
func TestValidatePolicyIsInvalid(t *testing.T) {
	err := acl.CheckPolicy(acl.PolicySpec{Name: "p", Rules: []fsm.ACLRule{{Prefix: "a", Rights: fsm.RightOperator}}})
	var inv *cluster.InvalidError
	if !errors.Is(err, cluster.ErrInvalid) || !errors.As(err, &inv) || inv.Field != "rules" || !strings.Contains(err.Error(), "empty prefix") {
		t.Errorf("ValidatePolicy of operator on a prefix = %v, want invalid rules naming the empty prefix", err)
	}
	if err := acl.CheckPolicy(acl.PolicySpec{Name: "ok"}); err != nil {
		t.Errorf("ValidatePolicy of a valid policy = %v", err)
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

// startBootstrappedACLNode starts one node with ACLs on that deny by
// default and bootstraps them; it returns the node and the bootstrap
// token.
func startBootstrappedACLNode(t *testing.T, ctx context.Context) (*cluster.Node, cluster.NewToken) {
	t.Helper()
	n := startACLNode(t, cluster.ACLDeny)
	boot, err := n.ACL().Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n, boot
}

func TestResolveToken(t *testing.T) {
	ctx := context.Background()
	n, boot := startBootstrappedACLNode(t, ctx)
	if _, err := n.ACL().Bootstrap(ctx); !errors.Is(err, cluster.ErrACLBootstrapped) {
		t.Fatalf("second bootstrap: %v, want ErrACLBootstrapped", err)
	}
	if boot.SecretID == "" || boot.SecretID == boot.AccessorID || boot.SecretHash != acl.HashSecret(boot.SecretID) {
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
	// A warm hand-off's word that keys are prepared speaks for a worker:
	// a token cannot say it for a worker outside its holder binding, nor
	// for a group the worker could not serve with it.
	if _, err := n.Prepared(ctx, a, "parts", "other-1", []string{"parts/0"}); !errors.Is(err, cluster.ErrPermissionDenied) {
		t.Errorf("prepared for a worker outside the holder prefix: %v, want permission denied", err)
	}
	if _, err := n.Prepared(ctx, a, "other", "worker-1", []string{"other/1"}); !errors.Is(err, cluster.ErrPermissionDenied) {
		t.Errorf("prepared for a group the token cannot read: %v, want permission denied", err)
	}
	if _, err := n.Prepared(ctx, a, "parts", "worker-1", []string{"parts/0"}); err != nil {
		t.Errorf("prepared by the worker's own token: %v", err)
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

// forgeLease sends a forged AppendEntries, carrying an acquisition of key
// by holder, to the Raft port of a follower of c, and waits until every
// server has applied it; it returns the lease as the servers have it. The
// forged term makes the cluster elect again, and a server without the
// forged entry may win that election and overwrite it: the attacker then
// sends it again, up to four times.
func forgeLease(t *testing.T, c *inproc.Cluster, key, holder string) (fsm.Lease, forgeraft.Result) {
	t.Helper()
	cmd := fsm.Encode(fsm.Acquire{Key: key, Holder: holder, TTL: time.Hour})
	var total forgeraft.Result
	for attempt := 1; attempt <= 4; attempt++ {
		target := (c.Leader() + 1) % c.Len()
		res, err := forgeraft.Append(c.Peer(target).RaftAddr, cmd, 10*time.Second)
		if err != nil {
			t.Fatalf("forged append to %s: %v", c.Peer(target).ID, err)
		}
		total.Term, total.Index, total.Requests = res.Term, res.Index, total.Requests+res.Requests
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(harness.DefaultInterval) {
			if got, ok := heldEverywhere(t, c, key, holder); ok {
				return got, total
			}
		}
		t.Logf("forged append %d to %s: the lease did not reach every server (the election went to a server without it); sending it again", attempt, c.Peer(target).ID)
	}
	t.Fatalf("after 4 forged appends, %s is not held by %s on every server", key, holder)
	return fsm.Lease{}, total
}

// heldEverywhere reports whether every server of c holds key for holder,
// and the lease as they have it.
func heldEverywhere(t *testing.T, c *inproc.Cluster, key, holder string) (fsm.Lease, bool) {
	var got fsm.Lease
	for i := range c.Len() {
		v, err := c.Node(i).Get(harness.Context(t, time.Second), key, cluster.Stale)
		if err != nil || !v.Held || v.Holder != holder {
			return fsm.Lease{}, false
		}
		got = *v.Lease
	}
	return got, true
}

// Plain Raft authenticates nobody: one forged AppendEntries of a newer
// term, sent by someone who knows only a follower's Raft port, writes a
// lease of the sender's choice, which the cluster then commits on every
// server. This is why ACLs refuse to start on plain Raft
// (TestACLsNeedAuthenticatedRaft); with mutual TLS the same request is
// refused in the handshake (TestRaftOverMutualTLS).
func TestForgedAppendEntriesOnPlainRaft(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{TCP: true})
	got, res := forgeLease(t, c, "forged/k", "mallory")
	t.Logf("forged lease %s held by %s, token %d, on all 3 servers, after %d requests (forged term %d, index %d)", got.Key, got.Holder, got.Token, res.Requests, res.Term, res.Index)
}

// With ACLs on, Raft must be authenticated: a node that would listen for
// Raft on plain TCP is refused at start, naming the field and what to add.
// Mutual TLS, or an in-memory transport (no port at all), starts.
func TestACLsNeedAuthenticatedRaft(t *testing.T) {
	plain := inproc.Config("n1", t.TempDir())
	plain.RaftAddr, plain.ACLEnabled = harness.FreeAddr(t), true
	plain.InitialCluster = []cluster.Peer{{ID: "n1", RaftAddr: plain.RaftAddr, HTTPAddr: plain.HTTPAddr}}
	n, err := cluster.New(plain)
	if err == nil {
		n.Shutdown()
		// The configuration started: show what it protects.
		c := inproc.Start(t, 3, inproc.Options{TCP: true, Tweak: func(cfg *cluster.Config) { cfg.ACLEnabled = true }})
		got, res := forgeLease(t, c, "forged/k", "mallory")
		t.Fatalf("a node with ACLs on and Raft on plain TCP started; in such a cluster %d unauthenticated Raft requests committed lease %s to %s (token %d) on all 3 servers", res.Requests, got.Key, got.Holder, got.Token)
	}
	if !errors.Is(err, cluster.ErrACLsNeedAuthenticatedRaft) {
		t.Errorf("got %v, want an ErrACLsNeedAuthenticatedRaft", err)
	}
	for _, want := range []string{"acl-enabled", "TLS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}

	p := newPKI(t)
	for _, tc := range []struct {
		name  string
		tweak func(*cluster.Config)
	}{
		{"mutual TLS", func(cfg *cluster.Config) { cfg.TLS = p.server(cfg.NodeID, cfg.ClusterName) }},
		{"in-memory transport", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := inproc.Start(t, 1, inproc.Options{TCP: tc.tweak != nil, Tweak: func(cfg *cluster.Config) {
				cfg.ACLEnabled = true
				if tc.tweak != nil {
					tc.tweak(cfg)
				}
			}})
			if _, err := c.Node(c.Leader()).ACL().Bootstrap(harness.Context(t, 10*time.Second)); err != nil {
				t.Fatalf("bootstrap with ACLs on %s: %v", tc.name, err)
			}
		})
	}
}
