package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// TestRecoverAloneLeadsWithEverything: after every server stopped, the
// one recovered alone elects itself and serves every lease and token it
// had; its next token is above them.
func TestRecoverAloneLeadsWithEverything(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	li := c.Leader()
	ctx := harness.Context(t, 10*time.Second)
	a, _, err := c.Node(li).Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "a", Holder: "h", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := (li + 1) % c.Len()
	harness.WaitUntil(t, 5*time.Second, "the survivor has the grant", func() bool {
		v, err := c.Node(s).Get(ctx, "a", cluster.Stale)
		return err == nil && v.Token == a.Token
	})
	for i := range c.Len() {
		c.Stop(i)
	}
	if _, err := cluster.RecoverAlone(c.Dir(s), "n9", nil); err == nil || !strings.Contains(err.Error(), "not n9") {
		t.Fatalf("recover under another node id: %v, want a refusal naming the data dir's server", err)
	}
	r, err := cluster.RecoverAlone(c.Dir(s), c.Peer(s).ID, nil)
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
