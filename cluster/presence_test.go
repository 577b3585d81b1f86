package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// A worker that holds a presence lease (wire.PresencePrefix + its id, as
// id#suffix, its groups in the metadata) is a live worker of its groups
// without gossip: the balancer plans the group's keys to it, the workers
// list shows it, and once the lease is released its keys have no target
// again. A presence lease whose holder is another worker's announces
// nothing.
func TestPresenceLeaseMakesAWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := inproc.Start(t, 1, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.BalanceSettle, cfg.BalanceDebounce = 10*time.Millisecond, 10*time.Millisecond
	}})
	n := c.Node(c.Leader())
	if _, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "g", Prefix: "g/", Count: 4}); err != nil {
		t.Fatal(err)
	}
	acquire := func(id, holder string, md map[string]string) *cluster.LeaseView {
		t.Helper()
		l, _, err := n.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: wire.PresencePrefix + id, Holder: holder, TTL: time.Minute, Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		return &l
	}
	targets := func(worker string) int {
		return len(harness.OwnedBy(cluster.MachineOf(n).Group("g").Assignment, worker))
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	acquire("w2", "w1#1a2b", map[string]string{wire.PresenceGroups: "g"}) // another worker's holder
	l := acquire("w1", "w1#1a2b", map[string]string{wire.PresenceGroups: "g", wire.PresenceCapacity: "3", wire.PresencePrepareMS: "500"})
	eventually("w1 targeted at 3 keys (its capacity)", func() bool { return targets("w1") == 3 })
	if targets("w2") != 0 {
		t.Errorf("w2, announced by a holder of w1, was given %d keys", targets("w2"))
	}
	ws, _, _, err := n.Workers(ctx, cluster.Stale, "w1", "", 10)
	if err != nil || len(ws) != 1 || ws[0].Status != "alive" || ws[0].Capacity != 3 {
		t.Errorf("workers list of w1 = %+v, %v; want alive with capacity 3", ws, err)
	}
	if _, err := n.Release(ctx, l.Key, l.Holder, testSecret, l.Token); err != nil {
		t.Fatal(err)
	}
	eventually("no key targeted once w1's presence ended", func() bool { return targets("w1") == 0 })
}
