package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// grantOnSurvivor acquires key for holder on the leader of c and waits
// until the server after the leader, the survivor of a recovery, has the
// grant. It returns the grant and the survivor's index.
func grantOnSurvivor(t *testing.T, ctx context.Context, c *inproc.Cluster, key, holder string) (cluster.LeaseView, int) {
	t.Helper()
	li := c.Leader()
	lease := acquireOn(t, ctx, c.Node(li), key, holder, time.Minute)
	s := (li + 1) % c.Len()
	harness.WaitUntil(t, 5*time.Second, "the survivor has the grant of "+key, func() bool {
		v, err := c.Node(s).Get(ctx, key, cluster.Stale)
		return err == nil && v.Token == lease.Token
	})
	return lease, s
}

// TestRecoverAloneLeadsWithEverything: after every server stopped, the
// one recovered alone elects itself and serves every lease and token it
// had; its next token is above them.
func TestRecoverAloneLeadsWithEverything(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	ctx := harness.Context(t, 10*time.Second)
	a, s := grantOnSurvivor(t, ctx, c, "a", "h")
	for i := range c.Len() {
		c.Stop(i)
	}
	if _, err := cluster.RecoverAlone(c.Dir(s), "n9", 0, nil); err == nil || !strings.Contains(err.Error(), "not n9") {
		t.Fatalf("recover under another node id: %v, want a refusal naming the data dir's server", err)
	}
	r, err := cluster.RecoverAlone(c.Dir(s), c.Peer(s).ID, 0, nil)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if len(r.Before.Servers) != 3 || len(r.After.Servers) != 1 || r.Held != 1 || r.LastToken != a.Token {
		t.Fatalf("recovery %+v, want 3 servers before, 1 after, 1 held, last token %d", r, a.Token)
	}
	c.Restart(s)
	if got := c.Leader(); got != s {
		t.Fatalf("leader %d after the recovery, want the survivor %d", got, s)
	}
	v, err := c.Node(s).Get(ctx, "a", cluster.Linearizable)
	if err != nil || !v.Held || v.Token != a.Token {
		t.Fatalf("a after the recovery: %+v, %v; want held with token %d", v, err, a.Token)
	}
	b, _, err := c.Node(s).Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "b", Holder: "h", TTL: time.Minute})
	if err != nil || b.Token <= a.Token {
		t.Fatalf("acquire after the recovery: %+v, %v; want a token above %d", b, err, a.Token)
	}
}

// TestRecoverAloneNeverGivesAKeyAnOlderToken: a survivor cut off while the
// others granted app/rk to bob (and bob released it) still holds alice's
// older lease; recovered alone with a token floor of the lost servers'
// last token, it frees app/rk, alice's renewals are refused, and the next
// grant is above bob's token.
func TestRecoverAloneNeverGivesAKeyAnOlderToken(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	alice, s := grantOnSurvivor(t, ctx, c, "app/rk", "alice")
	c.Isolate(s)
	var bob cluster.LeaseView
	err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		if v, err := n.Get(ctx, "app/rk", cluster.Linearizable); err == nil && v.Holder == "alice" && v.Held {
			if _, err := n.Release(ctx, "app/rk", "alice", testSecret, alice.Token); err != nil {
				return err
			}
		}
		b, _, err := n.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "app/rk", Holder: "bob", TTL: time.Minute})
		if err != nil {
			return err
		}
		bob = b
		_, err = n.Release(ctx, "app/rk", "bob", testSecret, b.Token)
		return err
	})
	if err != nil {
		t.Fatalf("bob's turn on the majority: %v", err)
	}
	for i := range c.Len() {
		c.Stop(i)
	}
	r, err := cluster.RecoverAlone(c.Dir(s), c.Peer(s).ID, bob.Token, nil)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if r.Freed != 1 || r.LastToken != bob.Token || r.Held != 0 {
		t.Fatalf("recovery %+v, want alice's lease freed and the counter at bob's token %d", r, bob.Token)
	}
	c.Heal(s)
	c.Restart(s)
	if got := c.Leader(); got != s {
		t.Fatalf("leader %d after the recovery, want the survivor %d", got, s)
	}
	n := c.Node(s)
	if v, err := n.Get(ctx, "app/rk", cluster.Linearizable); err != nil || v.Held {
		t.Fatalf("app/rk after the recovery: %+v, %v; want free (alice's token %d is older than bob's %d)", v.Lease, err, alice.Token, bob.Token)
	}
	if _, err := n.Renew(ctx, "app/rk", "alice", testSecret, alice.Token); err == nil {
		t.Fatalf("alice renewed token %d after the recovery, below bob's %d", alice.Token, bob.Token)
	}
	next, _, err := n.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "app/rk", Holder: "carol", TTL: time.Minute})
	if err != nil || next.Token <= bob.Token {
		t.Fatalf("next grant of app/rk: %+v, %v; want a token above bob's %d", next.Lease, err, bob.Token)
	}
}
